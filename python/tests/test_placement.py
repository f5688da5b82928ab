"""The placement study's plan, tables and figure, on a small flash."""

import pytest

from zonelab import placement, sweep
from zonelab._native import ZonelabError


def small_plan():
    specs = [s for s in placement.plan(quick=True, utilizations=[70])
             if s["workload"] == "cache" and s["interface"] in ("conventional", {"fdp": 2}, "zns")]
    for s in specs:
        s.update(blocks_per_plane=64, pages_per_block=48, windows=4)
    return specs


def test_the_plan_crosses_workloads_interfaces_and_utilizations():
    plan = placement.plan(quick=True)
    assert len(plan) == len(placement.WORKLOADS) * len(placement.INTERFACES) * 2
    assert len({sweep.key(s) for s in plan}) == len(plan), "every run is its own"


def test_runs_turn_into_tables_and_a_figure(tmp_path):
    runs = sweep.run_serial(small_plan())
    frame = placement.table(runs)
    assert list(frame.interface) == ["conventional", "fdp-2", "zns"]
    by = frame.set_index("interface").write_amplification
    assert by["fdp-2"] < by["conventional"], "the cache's engines apart collect less"
    over_time = placement.windows(runs)
    assert len(over_time) == 3 * 4
    placement.plot(frame, over_time, str(tmp_path / "placement.png"))
    assert (tmp_path / "placement.png").stat().st_size > 10_000


def test_a_spec_outside_the_study_is_refused():
    spec = dict(small_plan()[0], utilization_pct=20)
    with pytest.raises(ZonelabError, match="50 to 95"):
        sweep.run_serial([spec])


def test_the_device_ftl_can_collect_by_cost_benefit():
    specs = [s for s in placement.plan(quick=True, utilizations=[70], gc_victim="cost_benefit")
             if s["workload"] == "skewed" and s["interface"] == {"fdp": 2}]
    for s in specs:
        s.update(blocks_per_plane=64, pages_per_block=48, windows=4)
    frame = placement.table(sweep.run_serial(specs))
    assert list(frame.gc_victim) == ["cost_benefit"]
    with pytest.raises(ValueError, match="greedy or cost_benefit"):
        placement.plan(quick=True, gc_victim="oldest")
