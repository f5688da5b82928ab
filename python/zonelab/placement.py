"""The placement study: what do a conventional FTL, Flexible Data Placement
and ZNS cost on the same flash, for the same host workloads?

Each run (``{"kind": "placement", ...}``, run by the Rust side) writes one
workload through one interface on the zn540's flash with fewer blocks per
plane, fills the workload's logical space, then overwrites it several times
over, and measures per window of bytes written the write amplification
(media bytes programmed over the application's bytes), the throughput and
the p99 write latency (docs/placement.md):

* interfaces: ``conventional`` (the sn640's page-mapped FTL), ``fdp-1``,
  ``fdp-2``, ``fdp-4``, ``fdp-8`` (the same FTL with FDP; the workload's
  classes fold onto the handles in order) and ``zns`` (the zn540, the host
  mapping and collecting garbage itself);
* workloads: ``skewed`` (eight bands, band i taking 2^-(i+1) of the
  writes), ``cache`` (a CacheLib-like small-object region and large-object
  log) and ``lsm`` (a leveled LSM tree's log and files);
* utilization: the workload's share of the conventional namespace;
* the device FTL's garbage collection victim: ``greedy`` (the default) or
  ``cost_benefit`` (the conventional and FDP interfaces; with ZNS the host
  collects).

:func:`plan` lists the runs, :func:`table` and :func:`windows` turn stored
runs into frames, :func:`plot` draws the figure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = ["INTERFACES", "WORKLOADS", "plan", "table", "windows", "plot"]

INTERFACES = ("conventional", "fdp-1", "fdp-2", "fdp-4", "fdp-8", "zns")
WORKLOADS = ("skewed", "cache", "lsm")


def _interface(name: str) -> Any:
    if name in ("conventional", "zns"):
        return name
    if name.startswith("fdp-"):
        return {"fdp": int(name[4:])}
    raise ValueError(f"interface '{name}': use one of {', '.join(INTERFACES)}")


def _name(interface: Any) -> str:
    return interface if isinstance(interface, str) else f"fdp-{interface['fdp']}"


def plan(
    quick: bool = False,
    utilizations: Optional[Sequence[int]] = None,
    blocks_per_plane: Optional[int] = None,
    seed: int = 1,
    gc_victim: str = "greedy",
) -> List[Dict[str, Any]]:
    """The study's run specifications (for :func:`zonelab.sweep.run`). Quick:
    a flash of 96 blocks of 96 pages per plane (9 GiB) and two utilizations;
    otherwise the zn540's blocks, 128 per plane (144 GiB)."""
    if gc_victim not in ("greedy", "cost_benefit"):
        raise ValueError(f"gc_victim '{gc_victim}': use greedy or cost_benefit")
    utilizations = list(utilizations or ((60, 90) if quick else (50, 60, 70, 80, 90)))
    specs = []
    for workload in WORKLOADS:
        for utilization in utilizations:
            for interface in INTERFACES:
                specs.append({
                    "kind": "placement",
                    "interface": _interface(interface),
                    "workload": workload,
                    "utilization_pct": int(utilization),
                    "blocks_per_plane": blocks_per_plane or (96 if quick else 128),
                    "pages_per_block": 96 if quick else 1152,
                    "overwrites": 4,
                    "queue_depth": 8,
                    "windows": 8 if quick else 24,
                    "seed": seed,
                    "gc_victim": gc_victim,
                })
    return specs


def table(runs: Sequence[Mapping[str, Any]]) -> "pandas.DataFrame":  # noqa: F821
    """One row per run: interface, workload, utilization, and at steady
    state (the last half of the windows) write amplification, throughput
    (MiB/s) and the highest window p99 write latency (µs)."""
    import pandas as pd

    rows = []
    for run in runs:
        spec, result = run["spec"], run["result"]
        rows.append({
            "interface": _name(spec["interface"]),
            "workload": spec["workload"],
            "utilization_pct": spec["utilization_pct"],
            "gc_victim": spec.get("gc_victim", "greedy"),
            "space_gib": result["space_gib"],
            "write_amplification": result["write_amplification"],
            "throughput_mib_s": result["throughput_mib_s"],
            "p99_latency_us": result["p99_latency_us"],
        })
    return pd.DataFrame(rows)


def windows(runs: Sequence[Mapping[str, Any]]) -> "pandas.DataFrame":  # noqa: F821
    """One row per window of every run: the metrics over time."""
    import pandas as pd

    rows = []
    for run in runs:
        spec = run["spec"]
        for w in run["result"]["windows"]:
            rows.append({"interface": _name(spec["interface"]), "workload": spec["workload"],
                         "utilization_pct": spec["utilization_pct"], **w})
    return pd.DataFrame(rows)


def _style(interface: str) -> Dict[str, Any]:
    # fdp-1 places everything on one handle, as the conventional FTL does: dashed over it, both show.
    return {"ls": "--", "lw": 1.2} if interface == "fdp-1" else {"lw": 2.2 if interface == "conventional" else 1.5}


def plot(frame: "pandas.DataFrame", over_time: "pandas.DataFrame", path: Optional[str] = None,  # noqa: F821
         title: str = ""):
    """Rows: workloads. Columns: write amplification, throughput and p99
    latency against utilization (a line per interface), and write
    amplification over bytes written at the highest utilization."""
    import matplotlib.pyplot as plt

    colours = {"conventional": "#000000", "fdp-1": "#56b4e9", "fdp-2": "#0072b2", "fdp-4": "#009e73",
               "fdp-8": "#e69f00", "zns": "#d55e00"}
    metrics = (("write_amplification", "write amplification"), ("throughput_mib_s", "throughput (MiB/s)"),
               ("p99_latency_us", "p99 write latency (µs)"))
    workloads = [w for w in WORKLOADS if w in set(frame.workload)]
    fig, axes = plt.subplots(len(workloads), 4, figsize=(17, 3.6 * len(workloads)), squeeze=False)
    for row, workload in zip(axes, workloads):
        part = frame[frame.workload == workload]
        for ax, (column, label) in zip(row, metrics):
            for interface in INTERFACES:
                line = part[part.interface == interface].sort_values("utilization_pct")
                if len(line):
                    ax.plot(line.utilization_pct, line[column], marker="o", ms=3, label=interface,
                            color=colours[interface], **_style(interface))
            ax.set_xlabel("utilization (%)")
            ax.set_ylabel(label)
            ax.set_title(f"{workload}: {label}", fontsize=9)
            ax.grid(True, alpha=0.3)
        ax = row[3]
        top = over_time[over_time.workload == workload]
        top = top[top.utilization_pct == top.utilization_pct.max()]
        for interface in INTERFACES:
            line = top[top.interface == interface]
            if len(line):
                ax.plot(line.written_gib, line.write_amplification, label=interface, color=colours[interface],
                        **_style(interface))
        ax.set_xlabel("GiB written after the fill")
        ax.set_ylabel("write amplification")
        ax.set_title(f"{workload}: over time at {int(top.utilization_pct.max())}%", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title or "One flash, three interfaces: conventional FTL, FDP (1-8 handles), ZNS with host GC",
                 fontsize=11)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=100)
    return fig
