#!/usr/bin/env python3
"""The ConfZNS++ management design-space study on Dask (docs/python.md).

Sweeps the finish designs (pad request size x pause x pre-emption, and
metadata-only), the reset designs (erase all/data x sync/async/deferred) and
static vs dynamic zone mapping against writers, appenders and readers under
finishes or resets at three intensities, then plots foreground throughput
lost against management latency per design, with each operation's Pareto
front.

    python examples/design_space.py --out design-space            # local cluster, 2 workers
    python examples/design_space.py --address tcp://host:8786     # a running Dask cluster
    python examples/design_space.py --quick                        # the notebook's small plan

Finished runs are kept in OUT/store (rerunning skips them); OUT holds
runs.csv, designs.csv and design-space.png.
"""

import argparse
import os
import time

from zonelab import study, sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="design-space", help="output directory")
    parser.add_argument("--quick", action="store_true", help="fewer designs, intensities and a shorter runtime")
    parser.add_argument("--address", help="a Dask scheduler's address; a local cluster when absent")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster")
    args = parser.parse_args()

    started = time.time()
    plan = study.plan(quick=args.quick)
    store = sweep.Store(os.path.join(args.out, "store"))
    runs = sweep.run(plan, address=args.address, n_workers=args.workers, store=store)
    frame = study.table(runs)
    points = study.summary(frame)
    frame.to_csv(os.path.join(args.out, "runs.csv"), index=False)
    points.to_csv(os.path.join(args.out, "designs.csv"), index=False)
    study.plot(points, os.path.join(args.out, "design-space.png"))
    print(points.sort_values(["family", "throughput_lost_pct"]).to_string(index=False))
    print(f"{len(plan)} runs, {time.time() - started:.1f} s; wrote {args.out}/design-space.png")


if __name__ == "__main__":
    main()
