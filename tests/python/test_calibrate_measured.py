"""megasim.calibrate_measured: the report of `megasim calibrate --measured ... --json` as a dict, on
rows "measured" by megasim.run under a known calibration; bad input raises ValueError."""
import json

import pytest

import megasim
from conftest import SMALL, cli


def measured_csv(folder):
    truth = folder / "truth.toml"
    truth.write_text("[compute]\nbest_gemm_efficiency = 0.6\n")
    lines = ["name,plan.global_batch_size,iteration_time_s"]
    for batch in (64, 128):
        s = megasim.load(SMALL)
        s.set("plan.global_batch_size", batch)
        s.set("calibration.file", str(truth))
        lines.append(f"b{batch},{batch},{megasim.run(s).iteration_time_s!r}")
    csv = folder / "m.csv"
    csv.write_text("\n".join(lines) + "\n")
    return csv


def test_recovers_the_known_value_and_equals_the_cli(tmp_path):
    csv = measured_csv(tmp_path)
    report = megasim.calibrate_measured(csv, SMALL, fit=["best_gemm_efficiency"])
    assert report["parameters"][0]["fitted"] == pytest.approx(0.6, rel=1e-3)
    assert [r["name"] for r in report["rows"]] == ["b64", "b128"]
    out = cli("calibrate", SMALL, "--measured", csv, "--fit", "best_gemm_efficiency", "--json")
    assert json.loads(out.stdout) == report


def test_bad_input_raises_value_error(tmp_path):
    csv = measured_csv(tmp_path)
    with pytest.raises(ValueError, match="--fit"):
        megasim.calibrate_measured(csv, SMALL, fit=["gemm_speed"])
    with pytest.raises(ValueError, match="at most 2 parameters"):
        megasim.calibrate_measured(csv, SMALL, fit="best_gemm_efficiency,memory_efficiency,nvlink_efficiency")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="no header"):
        megasim.calibrate_measured(tmp_path / "empty.csv", SMALL)
