"""scripts/ablation_megascale.py stays the path from the Megatron-LM baseline scenario to MegaScale's:
all of its steps applied to 175b_megatron.toml give the very iteration of 175b_megascale.toml, and
the script prints one row per step, each a gain (the published direction of every step of the
ablation; the sizes are read from the output, not asserted)."""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import ablation_megascale  # noqa: E402
import predict_megascale  # noqa: E402

BINARY = os.environ["MEGASIM_BINARY"]


def test_every_step_applied_is_the_megascale_scenario():
    overrides = [o for _, step in ablation_megascale.STEPS for o in step]
    batch = ablation_megascale.LAMB_BATCH
    steps = predict_megascale.run(BINARY, "175b", "megatron", ablation_megascale.GPUS, batch, 1, overrides)
    megascale = predict_megascale.run(BINARY, "175b", "megascale", ablation_megascale.GPUS, batch, 1, [])
    assert steps["iteration_time_s"] == megascale["iteration_time_s"]
    assert steps["mfu"] == megascale["mfu"]
    assert all(step for _, step in ablation_megascale.STEPS[1:]), "a step without overrides"


def test_the_script_prints_a_gain_per_step():
    out = subprocess.run([sys.executable, str(ROOT / "scripts/ablation_megascale.py"), "--binary", BINARY,
                          "--samples", "1", "--json"], check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    assert [r["step"] for r in rows[:-1]] == [name for name, _ in ablation_megascale.STEPS]
    assert rows[-1]["global_batch_size"] == ablation_megascale.LAMB_BATCH
    for before, after in zip(rows, rows[1:]):
        assert after["mfu"] > before["mfu"], (before["step"], after["step"])
        assert abs(after["gain"] - (after["mfu"] - before["mfu"])) < 1e-12
