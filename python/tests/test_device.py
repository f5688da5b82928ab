import json
import os
import subprocess
import threading

import pytest

import zonelab

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "examples", "traces", "demo.jsonl")


def test_presets_are_the_cli_s():
    assert "zn540" in zonelab.presets()


def test_a_trace_gives_the_results_zonelab_exec_prints(small):
    dev = zonelab.Device(**small)
    with open(DEMO) as f:
        commands = [json.loads(line) for line in f if line.strip()]
    results = dev.submit_all(commands)
    cli = os.environ.get("ZONELAB_CLI")
    if cli:
        args = [cli, "exec", "--zones", "4", "--zone-size", "1m", "--zone-capacity", "512k", "--data", DEMO]
        printed = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        assert [json.loads(line) for line in printed.splitlines()] == results
    assert results[0]["status"] == "success"
    assert dev.clock_ns >= results[-1]["complete_ns"]


def test_identify_and_report_zones(small):
    dev = zonelab.Device(**small)
    ident = dev.identify()
    assert ident["nr_zones"] == 4 and ident["zcap"] * ident["lba_bytes"] == 512 * 1024
    dev.submit({"op": "write", "slba": 0, "nlb": 8})
    zones = dev.report_zones(max=2)
    assert len(zones) == 2 and zones[0]["wp"] == 8 and zones[0]["state"] == "implicitly_opened"
    frame = zonelab.to_frame(dev.submit({"op": "report_zones"}))
    assert list(frame["wp"])[:2] == [8, zones[1]["wp"]]


def test_capacity_shrinks_the_namespace_and_the_flash_together():
    dev = zonelab.Device("sn640", capacity="64g")
    assert dev.spec["capacity"] == "64g"
    toml = dev.config_toml()
    assert "zones = 32" in toml and "blocks_per_plane = 525" in toml and "pages_per_block = 144" in toml


def test_set_overrides_reach_the_configuration():
    dev = zonelab.Device(zones=8, zone_size="64m", zone_capacity="48m", set={"management.finish_ns": "2ms"})
    assert "finish_ns = 2000000" in dev.config_toml()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: zonelab.Device(zone_size="64x"), "zone_size: '64x' has an unknown size suffix"),
        (lambda: zonelab.Device("nope"), "unknown device 'nope'"),
        (lambda: zonelab.Device(set={"management.nope": 1}), "management.nope"),
        (lambda: zonelab.Device(zones=-1), "zones: expected a non-negative integer"),
        (lambda: zonelab.Device("sn640", capacity="1m"), "sn640 holds at least one zone, 2147483648 bytes"),
    ],
)
def test_bad_options_raise_zonelab_error_with_the_cli_message(make, message):
    with pytest.raises(zonelab.ZonelabError, match=message.replace(".", r"\.").replace("(", r"\(")):
        make()


def test_bad_commands_raise_and_the_device_goes_on(small):
    dev = zonelab.Device(**small)
    with pytest.raises(ValueError, match='command 1: missing "nlb"'):
        dev.submit({"op": "write", "slba": 0})
    with pytest.raises(zonelab.ZonelabError, match="unknown"):
        dev.submit({"op": "fly"})
    # An invalid command for the device is no error: the NVMe status a device returns.
    result = dev.submit({"op": "write", "slba": 5, "nlb": 1})
    assert result["status"] != "success" and "sc" in result


def test_devices_simulate_in_parallel_threads():
    def work(out, i):
        dev = zonelab.Device(zones=8, zone_size="64m", zone_capacity="48m")
        for n in range(200):
            dev.submit({"op": "write", "slba": 0 + n * 8, "nlb": 8})
        out[i] = dev.clock_ns

    out = [None] * 4
    threads = [threading.Thread(target=work, args=(out, i)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 1 and out[0] > 0


def test_fdp_writes_name_a_handle_and_the_logs_say_what_happened(small_fdp):
    dev = zonelab.Device(**small_fdp)
    unit = 4 * 192  # a reclaim unit: a 768 KiB block on each of 4 dies, in 4 KiB LBAs
    assert [(h["pid"], h["ruamw"]) for h in dev.ruh_status()] == [(0, unit), (1, unit)]
    assert dev.fdp_events(1, ["ru_not_fully_written"])["status"] == "success"
    assert dev.write(0, 16, pid=1)["status"] == "success"
    assert dev.write(16, 12)["status"] == "success"  # no directive: handle 0
    assert [h["ruamw"] for h in dev.ruh_status()] == [unit - 12, unit - 16]
    assert dev.ruh_update([1])["status"] == "success"
    assert dev.ruh_update([2])["status"] == "invalid_placement_handle_list"
    logs = dev.fdp_logs()
    assert logs["stats"]["host_bytes"] == 28 * 4096 and logs["config"]["handles"] == 2
    assert [e["kind"] for e in logs["host_events"]] == ["ru_not_fully_written"]
    assert logs["usage"][1]["events"] == ["ru_not_fully_written"]
    with pytest.raises(zonelab.ZonelabError, match="kinds"):
        dev.fdp_events(0, ["gc"])
    with pytest.raises(zonelab.ZonelabError, match="not a placement identifier"):
        dev.write(0, 1, pid=70000)


def test_fdp_methods_on_a_device_without_fdp_raise_or_answer_fdp_disabled(small):
    dev = zonelab.Device(**small)
    with pytest.raises(zonelab.ZonelabError, match="fdp_disabled"):
        dev.ruh_status()
    with pytest.raises(zonelab.ZonelabError, match="fdp_disabled"):
        dev.fdp_logs()
    assert dev.ruh_update([0])["status"] == "fdp_disabled"
