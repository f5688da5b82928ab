#!/usr/bin/env python3
"""The placement study on Dask: conventional FTL, FDP and ZNS on one flash (docs/placement.md).

Writes three host workloads (skewed overwrites, a flash cache, an LSM tree)
through a conventional FTL, FDP with 1, 2, 4 and 8 reclaim unit handles, and
ZNS with host garbage collection, at several utilizations of the same flash,
and plots write amplification, throughput and p99 write latency.

    python examples/placement_study.py --out placement                 # local cluster, 2 workers
    python examples/placement_study.py --address tcp://host:8786       # a running Dask cluster
    python examples/placement_study.py --quick                         # a 9 GiB flash, two utilizations

Finished runs are kept in OUT/store (rerunning skips them); OUT holds
runs.csv, windows.csv and placement.png.
"""

import argparse
import os
import time

from zonelab import placement, sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="placement", help="output directory")
    parser.add_argument("--quick", action="store_true", help="a small flash and two utilizations")
    parser.add_argument("--address", help="a Dask scheduler's address; a local cluster when absent")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster")
    args = parser.parse_args()

    started = time.time()
    plan = placement.plan(quick=args.quick)
    store = sweep.Store(os.path.join(args.out, "store"))
    runs = sweep.run(plan, address=args.address, n_workers=args.workers, store=store, raw=False)
    frame = placement.table(runs)
    over_time = placement.windows(runs)
    frame.to_csv(os.path.join(args.out, "runs.csv"), index=False)
    over_time.to_csv(os.path.join(args.out, "windows.csv"), index=False)
    placement.plot(frame, over_time, os.path.join(args.out, "placement.png"))
    print(frame.sort_values(["workload", "utilization_pct", "interface"]).to_string(index=False))
    print(f"{len(plan)} runs, {time.time() - started:.1f} s; wrote {args.out}/placement.png")


if __name__ == "__main__":
    main()
