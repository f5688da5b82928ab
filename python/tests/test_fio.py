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
