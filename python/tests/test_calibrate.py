import os

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
