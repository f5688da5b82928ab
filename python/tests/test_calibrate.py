import os
import subprocess

import pytest

import zonelab

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASUREMENTS = os.path.join(ROOT, "data", "measurements", "zn540.csv")


def test_calibrate_reruns_selected_rows_and_reports_them(tmp_path):
    report = zonelab.calibrate(MEASUREMENTS, only="T0002", out=tmp_path, runtime_ms=50, threads=1)
    rows = zonelab.to_frame(report["rows"])
    assert len(rows) == 1 and (tmp_path / "report.md").exists()
    assert "summary" in report
    with pytest.raises(zonelab.ZonelabError, match="selects none"):
        zonelab.calibrate(MEASUREMENTS, only="no-such-row", runtime_ms=50)


def _files(directory):
    """Every file under ``directory`` by relative path, with its bytes."""
    out = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = f.read()
    return out


def test_calibrate_fits_parameters_as_the_cli_does(tmp_path):
    options = dict(only="T000", runtime_ms=50, threads=1, fit=["controller.write_ns"], folds=0, max_evals=4)
    report = zonelab.calibrate(MEASUREMENTS, out=tmp_path / "py", **options)
    fit = report["extra"]
    assert [p["path"] for p in fit["params"]] == ["controller.write_ns"]
    assert fit["params"][0]["fitted"] > 0 and fit["loss_fitted"] <= fit["loss_start"]
    assert 1 <= fit["evaluations"] <= 4 and fit["cv_loss"] is None
    assert (tmp_path / "py" / "fitted.toml").exists() and "## Fit" in (tmp_path / "py" / "report.md").read_text()
    cli = os.environ.get("ZONELAB_CLI")
    if cli:
        args = [cli, "calibrate", MEASUREMENTS, "--only", "T000", "--runtime-ms", "50", "--jobs", "1"]
        args += ["--fit", "controller.write_ns", "--folds", "0", "--max-evals", "4", "--out", str(tmp_path / "cli")]
        subprocess.run(args, check=True, capture_output=True)
        assert _files(tmp_path / "py") == _files(tmp_path / "cli")
    with pytest.raises(zonelab.ZonelabError, match="--fit nope.x: no parameter 'nope' there"):
        zonelab.calibrate(MEASUREMENTS, only="T0002", runtime_ms=50, fit="nope.x")
    with pytest.raises(zonelab.ZonelabError, match="--fit needs at least one parameter"):
        zonelab.calibrate(MEASUREMENTS, only="T0002", runtime_ms=50, fit=[])
    with pytest.raises(zonelab.ZonelabError, match="folds"):
        zonelab.calibrate(MEASUREMENTS, only="T0002", fit="controller.write_ns", folds=-1)
    for weight in (0, -2.0, float("nan"), True, "2"):
        with pytest.raises(zonelab.ZonelabError, match="fit_tail_weight"):
            zonelab.calibrate(MEASUREMENTS, only="T0002", fit="controller.write_ns", fit_tail_weight=weight)
    weighed = zonelab.calibrate(MEASUREMENTS, out=tmp_path / "weighed", fit_tail_weight=3, **options)
    assert weighed["extra"]["tail_weight"] == 3.0


def test_calibrate_writes_what_the_cli_writes(tmp_path):
    zonelab.calibrate(MEASUREMENTS, only="C2 Fig 3a reset side,T14", out=tmp_path / "py", runtime_ms=50, threads=2)
    assert any(name.startswith("jobs/run-") for name in _files(tmp_path / "py"))
    cli = os.environ.get("ZONELAB_CLI")
    if cli:
        args = [cli, "calibrate", MEASUREMENTS, "--only", "C2 Fig 3a reset side,T14", "--runtime-ms", "50"]
        subprocess.run(args + ["--out", str(tmp_path / "cli")], check=True, capture_output=True)
        assert _files(tmp_path / "py") == _files(tmp_path / "cli")


def test_an_out_directory_with_files_needs_force(tmp_path):
    out = tmp_path / "cal"
    zonelab.calibrate(MEASUREMENTS, only="T0002", out=out, runtime_ms=50, threads=1)
    assert (out / ".zonelab-out").exists()
    with pytest.raises(zonelab.ZonelabError, match="already holds"):
        zonelab.calibrate(MEASUREMENTS, only="T0002", out=out, runtime_ms=50, threads=1)
    zonelab.calibrate(MEASUREMENTS, only="T0002", out=out, runtime_ms=50, threads=1, force=True)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(zonelab.ZonelabError, match="did not write"):
        zonelab.calibrate(MEASUREMENTS, only="T0002", out=foreign, runtime_ms=50, threads=1, force=True)
    assert (foreign / "notes.txt").read_text() == "keep"
