"""Plans: shards, the store, and Dask distributed (a real local cluster of worker processes)."""

import json
import os
import signal

import pytest

import zonelab
from zonelab import study, sweep


def small_plan(n=54):
    """A plan of n quick design runs (distinct specs)."""
    specs = study.plan(quick=True, runtime="5ms", concurrency=2)
    assert len(specs) >= n
    return specs[:n]


@pytest.fixture(scope="module")
def serial():
    plan = small_plan()
    return plan, sweep.run_serial(plan, raw=True)


def test_two_shards_together_equal_the_whole(serial, tmp_path):
    plan, whole = serial
    store = sweep.Store(tmp_path, "shard-0-of-2.jsonl")
    sweep.run_serial(sweep.shard(plan, 0, 2), store)
    store = sweep.Store(tmp_path, "shard-1-of-2.jsonl")
    sweep.run_serial(sweep.shard(plan, 1, 2), store)
    assert sweep.run_serial(plan, sweep.Store(tmp_path), raw=True) == whole


def test_a_rerun_executes_nothing(tmp_path, monkeypatch):
    plan = small_plan(6)
    first = sweep.run_serial(plan, sweep.Store(tmp_path), raw=True)
    monkeypatch.setattr(sweep, "run_line", lambda spec: pytest.fail("a stored run ran again"))
    assert sweep.run_serial(plan, sweep.Store(tmp_path), raw=True) == first
    with open(os.path.join(tmp_path, "sweep.jsonl")) as f:
        assert f.read().count("\n") == 6


def test_a_plan_of_54_runs_on_a_local_dask_cluster_equals_the_serial_run(serial, tmp_path):
    plan, whole = serial
    assert len(plan) >= 50
    store = sweep.Store(tmp_path)
    assert sweep.run(plan, n_workers=2, store=store, raw=True) == whole
    assert sorted(sweep.Store(tmp_path).lines.values()) == sorted(whole)


def test_the_plan_completes_when_a_worker_is_killed_mid_plan(serial):
    from dask.distributed import Client, LocalCluster

    plan, whole = serial
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            pids = client.run(os.getpid)
            assert len(pids) == 2
            victim = sorted(pids.values())[0]
            killed = []

            def kill_once(done, total):
                if done == 5 and not killed:
                    os.kill(victim, signal.SIGKILL)
                    killed.append(victim)

            assert sweep.run(plan, client=client, raw=True, on_result=kill_once) == whole
            assert killed == [victim]
            assert victim not in client.run(os.getpid).values()


def test_a_failing_run_raises_its_error_after_retries():
    spec = small_plan(1)[0]
    bad = dict(spec, device=dict(spec["device"], set=[["management.nope", "1"]]))
    with pytest.raises(zonelab.ZonelabError, match="management.nope"):
        sweep.run([bad], n_workers=1, retries=1)
    with pytest.raises(zonelab.ZonelabError, match="shard"):
        sweep.shard([bad], 2, 2)


def test_the_characterization_plan_renders_as_the_cli_does(tmp_path):
    plan = sweep.characterization_plan(quick=True, only="obs09")
    runs = sweep.run_serial(plan)
    summary = sweep.render_characterization(runs, tmp_path / "out")
    assert "obs09-open-close" in summary and (tmp_path / "out" / "obs09-open-close.csv").exists()


MEASUREMENTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "measurements", "zn540.csv"
)
# I/O rows, a management job at an intensity (it needs its standalone run) and a command sequence.
CALIBRATE = dict(only="C2 Fig 3a reset side,T14", runtime_ms=50)


def test_a_calibrate_plan_on_dask_equals_the_serial_run_and_renders_as_zonelab_calibrate(tmp_path):
    plan = sweep.calibrate_plan(MEASUREMENTS, **CALIBRATE)
    needing = [s for s in plan if sweep.needs(s)]
    assert needing and all(n in plan for s in needing for n in sweep.needs(s))
    serial = sweep.run_serial(plan, raw=True)
    # The throttled runs alone: Dask runs the standalone runs they need first, as tasks of their own.
    assert sweep.run(needing, n_workers=2, raw=True) == [serial[plan.index(s)] for s in needing]
    assert sweep.run(plan, n_workers=2, raw=True) == serial
    report = sweep.render_calibrate(serial, MEASUREMENTS, tmp_path / "plan", **CALIBRATE)
    direct = zonelab.calibrate(MEASUREMENTS, out=tmp_path / "direct", threads=1, **CALIBRATE)
    assert report == direct
    for name in ("rows.csv", "report.md"):
        assert (tmp_path / "plan" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes()


def test_a_run_that_needs_another_runs_it_first_and_stores_both(tmp_path):
    plan = sweep.calibrate_plan(MEASUREMENTS, **CALIBRATE)
    throttled = [s for s in plan if sweep.needs(s)][:1]
    store = sweep.Store(tmp_path)
    line = sweep.run_serial(throttled, store, raw=True)[0]
    assert len(store) == 2 and sweep.key(sweep.needs(throttled[0])[0]) in store
    assert sweep.run_line(json.dumps(throttled[0])) == line, "run alone, it runs what it needs itself"


def test_a_small_znsplus_plan_on_dask_equals_the_serial_run():
    scale = dict(fs_bytes=768 << 20, write_per_fs=1 / 128)
    plan = sweep.znsplus_plan(quick=True, **scale)
    assert len(plan) > 50 and plan[0]["kind"] == "znsplus"
    small = plan[:3]
    serial = sweep.run_serial(small, raw=True)
    assert sweep.run(small, n_workers=2, raw=True) == serial
    with pytest.raises(zonelab.ZonelabError, match="stored results for a plan of"):
        sweep.render_znsplus(serial, quick=True, **scale)
