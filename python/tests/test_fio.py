import os

import pytest

import zonelab

JOB = """
[global]
ioengine=io_uring_cmd
direct=1
zonemode=zbd
[w]
rw=write
bs=128k
size=2z
io_size=8m
"""


def test_fio_options_as_a_dict_give_fio_json():
    report = zonelab.run_fio(
        options={"name": "w", "rw": "write", "bs": "4k", "direct": 1, "zonemode": "zbd", "size": "1z", "io_size": "1m"},
        device={"zones": 8, "zone_size": "64m", "zone_capacity": "48m"},
    )
    job = report["jobs"][0]
    assert job["jobname"] == "w" and job["write"]["io_bytes"] == 1 << 20
    frame = zonelab.to_frame(report)
    assert frame.loc[0, "write.io_bytes"] == 1 << 20


def test_a_job_file_text_or_path_runs_and_is_deterministic(tmp_path):
    path = tmp_path / "w.fio"
    path.write_text(JOB)
    a = zonelab.run_fio(JOB, device="zn540", seed=3)
    b = zonelab.run_fio(str(path), device=zonelab.Device("zn540"), seed=3)
    assert a["jobs"][0]["write"] == b["jobs"][0]["write"]
    assert a["jobs"][0]["write"]["io_bytes"] == 8 << 20


def test_job_errors_carry_the_cli_message():
    with pytest.raises(zonelab.ZonelabError, match="rw"):
        zonelab.run_fio(options={"name": "w", "rw": "sideways"})
    with pytest.raises(zonelab.ZonelabError, match="no job"):
        zonelab.run_fio()
    with pytest.raises(zonelab.ZonelabError, match="scheduler 'fifo'"):
        zonelab.run_fio(JOB, scheduler="fifo")


def test_fs_bench_reports_a_job():
    report = zonelab.fs_bench(workload="varmail", fs_size="1g", write="64m", seed=2)
    assert report["jobs"][0]["ops"] > 0
    with pytest.raises(zonelab.ZonelabError, match="unknown option 'colour'"):
        zonelab.fs_bench(colour="red")


def test_fdp_hot_cold_pair_reports_lower_write_amplification_with_a_handle_per_job(small_fdp):
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "fio")
    waf = {}
    for name in ("fdp-hot-cold.fio", "fdp-one-handle.fio"):
        report = zonelab.run_fio(os.path.join(examples, name), device=small_fdp)
        fdp = report["zonelab"]["namespaces"][0]["fdp"]
        assert fdp["stats"]["host_bytes"] == 400 << 20
        assert [h["pid"] for h in fdp["handles"]] == [0, 1]
        waf[name] = fdp["stats"]["write_amplification"]
    assert waf["fdp-hot-cold.fio"] < 0.8 * waf["fdp-one-handle.fio"], waf


def test_fdp_jobs_are_refused_without_fdp_with_the_cli_message():
    with pytest.raises(zonelab.ZonelabError, match="has no Flexible Data Placement"):
        zonelab.run_fio(options={"name": "w", "ioengine": "io_uring_cmd", "rw": "write", "io_size": "64k", "fdp": 1})
    report = zonelab.run_fio(options={"name": "w", "rw": "write", "io_size": "64k"}, device={"zones": 8})
    assert "zonelab" not in report, "only an FDP namespace adds the key"
