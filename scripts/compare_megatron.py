#!/usr/bin/env python3
"""Predicted vs published for the Megatron-LM rows of ../shared/calibration/megatron_published.csv
that have a scenario in scenarios/megatron/ (Korthikanti et al. 2022, model-FLOP MFU and iteration
time). Usage: python3 scripts/compare_megatron.py [path/to/megasim]"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINARY = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/cli/megasim")

# scenario file -> (published iteration time s, published MFU or None)
PUBLISHED = {
    "korthikanti_22b.toml": (1.10, 0.415),
    "korthikanti_175b.toml": (13.75, 0.514),
    "korthikanti_530b.toml": (37.83, 0.560),
    "korthikanti_1t.toml": (71.49, 0.563),
    "korthikanti_530b_dp8.toml": (39.15, 0.542),
    "korthikanti_175b_full_recompute.toml": (18.13, None),
    "korthikanti_530b_full_recompute.toml": (49.05, None),
}


def main():
    print(f"{'scenario':40} {'time pub':>9} {'time sim':>9} {'err %':>7} {'MFU pub':>8} {'MFU sim':>8} {'pts':>6}")
    for name, (t_pub, mfu_pub) in PUBLISHED.items():
        out = subprocess.run([BINARY, "run", str(ROOT / "scenarios/megatron" / name), "--json"],
                             check=True, capture_output=True, text=True)
        report = json.loads(out.stdout)
        t_sim, mfu_sim = report["iteration_time_s"], report["mfu"]
        err = 100 * (t_sim - t_pub) / t_pub
        pts = "" if mfu_pub is None else f"{100 * (mfu_sim - mfu_pub):+6.1f}"
        mfu_p = "" if mfu_pub is None else f"{mfu_pub:8.3f}"
        print(f"{name:40} {t_pub:9.2f} {t_sim:9.2f} {err:+7.1f} {mfu_p:>8} {mfu_sim:8.3f} {pts:>6}")


if __name__ == "__main__":
    main()
