"""The ConfZNS++ management design-space study: which finish and reset
design hurts I/O least?

:func:`designs` lists the device designs (``--set`` overrides of the
device's management configuration, docs/configuration.md):

* finish by padding: pad request size x pause between requests x host
  pre-emption, and the metadata-only finish;
* reset: erase all blocks or only data blocks x erase synchronously, in
  the background (async) or deferred to the next program;
* static and dynamic zone-to-block-group mapping.

:func:`plan` crosses the finish designs with finishes in the background
and the reset and mapping designs with resets, for writers, appenders and
readers at several intensities (think times between management
operations), plus a baseline without management per workload.
:func:`table` turns the stored runs into one row per run with the
throughput lost against the baseline, :func:`summary` into one point per
design (mean throughput lost, mean management latency) with its place on
the Pareto front, and :func:`plot` draws the Pareto view.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["DEVICE", "designs", "plan", "table", "summary", "plot"]

# A zn540 with small zones, so that prefilling full zones to reset is quick.
DEVICE: Dict[str, Any] = {"preset": "zn540", "zones": 128, "zone_size": "32m", "zone_capacity": "24m", "data": False}

WORKLOADS = ("writers", "appenders", "readers")


def designs(quick: bool = False) -> List[Tuple[str, str, Dict[str, str]]]:
    """(name, family, set-overrides) per design; ``family`` is finish, reset or mapping."""
    out: List[Tuple[str, str, Dict[str, str]]] = []
    pads = ("64k", "1m") if quick else ("16k", "64k", "256k", "1m")
    pauses = ("0ns", "50us") if quick else ("0ns", "20us", "100us")
    for pad in pads:
        for pause in pauses:
            for preempt in ("true", "false"):
                name = f"pad {pad} pause {pause} {'preempt' if preempt == 'true' else 'no-preempt'}"
                sets = {
                    "management.finish.design": "pad",
                    "management.finish.pad_bytes": pad,
                    "management.finish.pause_ns": pause,
                    "management.finish.preempt": preempt,
                }
                out.append((name, "finish", sets))
    out.append(("metadata-only finish", "finish", {"management.finish.design": "metadata"}))
    for erase in ("all", "data"):
        for at in ("sync", "async", "deferred"):
            sets = {"management.reset.erase": erase, "management.reset.erase_at": at}
            out.append((f"erase {erase} {at}", "reset", sets))
    for mapping in ("static", "dynamic"):
        out.append((f"{mapping} mapping", "mapping", {"mapping.zone_mapping": mapping}))
    return out


def _spec(design: str, sets: Mapping[str, str], workload: str, management: str, think: str,
          runtime: str, concurrency: int, seed: int) -> Dict[str, Any]:
    device = dict(DEVICE)
    if sets:
        device["set"] = [[k, v] for k, v in sets.items()]
    return {
        "kind": "design",
        "design": design,
        "device": device,
        "workload": workload,
        "management": management,
        "think": think,
        "concurrency": concurrency,
        "runtime": runtime,
        "seed": seed,
    }


def plan(
    quick: bool = False,
    thinks: Optional[Sequence[str]] = None,
    runtime: Optional[str] = None,
    concurrency: int = 4,
    seed: int = 1,
) -> List[Dict[str, Any]]:
    """The study's run specifications (for :func:`zonelab.sweep.run`)."""
    thinks = list(thinks or (("2ms", "10ms") if quick else ("1ms", "4ms", "16ms")))
    runtime = runtime or ("100ms" if quick else "500ms")
    specs = [_spec("baseline", {}, w, "none", thinks[0], runtime, concurrency, seed) for w in WORKLOADS]
    for name, family, sets in designs(quick):
        management = "finish" if family == "finish" else "reset"
        for workload in WORKLOADS:
            for think in thinks:
                specs.append(_spec(name, sets, workload, management, think, runtime, concurrency, seed))
    return specs


def table(runs: Sequence[Mapping[str, Any]]) -> "pandas.DataFrame":  # noqa: F821
    """One row per stored run: design, family, workload, management, think,
    foreground KIOPS, throughput lost against the workload's baseline (%),
    management latency (mean and p99, µs)."""
    import pandas as pd

    families = {name: family for name, family, _ in designs(False) + designs(True)}
    rows = []
    for run in runs:
        spec, result = run["spec"], run["result"]
        rows.append({
            "design": spec["design"],
            "family": families.get(spec["design"], "baseline"),
            "workload": spec["workload"],
            "management": spec["management"],
            "think": spec["think"],
            "kiops": result["foreground_kiops"],
            "management_ops": result["management_ops"],
            "management_lat_mean_us": result["management_lat_mean_us"],
            "management_lat_p99_us": result["management_lat_p99_us"],
        })
    frame = pd.DataFrame(rows)
    base = frame[frame.design == "baseline"].set_index("workload")["kiops"]
    frame["throughput_lost_pct"] = (1 - frame["kiops"] / frame["workload"].map(base)) * 100
    return frame[frame.design != "baseline"].reset_index(drop=True)


def summary(frame: "pandas.DataFrame") -> "pandas.DataFrame":  # noqa: F821
    """One row per design: mean throughput lost and mean management latency
    over workloads and intensities, and whether it is on the Pareto front
    (no other design of its operation both loses less and is faster)."""
    grouped = frame.groupby(["family", "design"], sort=True).agg(
        throughput_lost_pct=("throughput_lost_pct", "mean"),
        management_lat_mean_us=("management_lat_mean_us", "mean"),
    ).reset_index()
    operation = grouped["family"].map(lambda f: "finish" if f == "finish" else "reset")
    pareto = []
    for i, row in grouped.iterrows():
        rivals = grouped[(operation == operation[i]) & (grouped.index != i)]
        dominated = ((rivals.throughput_lost_pct <= row.throughput_lost_pct)
                     & (rivals.management_lat_mean_us <= row.management_lat_mean_us)
                     & ((rivals.throughput_lost_pct < row.throughput_lost_pct)
                        | (rivals.management_lat_mean_us < row.management_lat_mean_us))).any()
        pareto.append(not dominated)
    grouped["pareto"] = pareto
    return grouped


def plot(points: "pandas.DataFrame", path: Optional[str] = None, title: str = ""):
    """The Pareto view: throughput lost against management latency, a point per
    design, the front of each operation (finish, reset) joined by a line."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    colours = {"finish": "#cc79a7", "reset": "#d55e00", "mapping": "#0072b2"}
    for ax, operation in zip(axes, ("finish", "reset")):
        part = points[points.family.map(lambda f: (f == "finish") == (operation == "finish"))]
        for family, group in part.groupby("family"):
            ax.scatter(group.management_lat_mean_us, group.throughput_lost_pct, label=family,
                       color=colours.get(family, "black"), s=28, zorder=3)
        front = part[part.pareto].sort_values("management_lat_mean_us")
        ax.plot(front.management_lat_mean_us, front.throughput_lost_pct, color="black", lw=1, ls="--",
                label="Pareto front", zorder=2)
        # Designs that land on one point share one label.
        for (x, y), same in front.groupby(["management_lat_mean_us", "throughput_lost_pct"]):
            ax.annotate("\n".join(same.design), (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel(f"{operation} latency, mean (µs, log scale)")
        ax.set_ylabel("foreground throughput lost (%)")
        ax.set_title(f"{operation} designs")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or "ConfZNS++ management designs: throughput lost vs management latency "
                 "(mean over writers, appenders, readers and intensities)", fontsize=10)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig
