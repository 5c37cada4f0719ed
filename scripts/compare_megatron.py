#!/usr/bin/env python3
"""Predicted vs published for every Megatron-LM row of scenarios/megatron/megatron_published.csv (the
public table of ../shared/calibration/), each with its scenario in scenarios/megatron/:
- Korthikanti et al. 2022: iteration time and model-FLOP MFU;
- Narayanan et al. SC'21 Table 1: TFLOP/s per GPU counting the recompute pass,
  96·B·s·l·h²·(1 + s/6h + V/16lh) / time / GPUs. The paper tuned the micro-batch per row and does not
  list it, so each row is run with micro-batch 1, 2, 4 and 8 and the fastest that fits is reported.
Usage: python3 scripts/compare_megatron.py [path/to/megasim]"""
import csv
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


# A copy of ../shared/calibration/megatron_published.csv, kept with the scenarios it describes.
CSV = ROOT / "scenarios/megatron/megatron_published.csv"
MICRO_BATCHES = (1, 2, 4, 8)


def run(scenario, *overrides):
    args = [BINARY, "run", str(scenario), "--json"]
    for o in overrides:
        args += ["--set", o]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode == 2:  # an impossible plan (does not fit, does not divide): skipped
        return None
    out.check_returncode()
    return json.loads(out.stdout)


def narayanan_tflops(row, time_s):
    b, s, l, h, v = (float(row[k]) for k in ("global_batch", "seq", "layers", "hidden", "vocab"))
    flops = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    return flops / time_s / float(row["gpus"]) / 1e12


def narayanan():
    rows = [r for r in csv.DictReader(open(CSV)) if r["source"].startswith("Narayanan")]
    print(f"\n{'scenario':28} {'GPUs':>5} {'mb':>3} {'time sim':>9} {'TFLOP/s pub':>12} {'TFLOP/s sim':>12} {'err %':>7}")
    errors = []
    for row in rows:
        scenario = ROOT / "scenarios/megatron" / f"narayanan_{row['params_b'].replace('.', 'p')}b.toml"
        best = None
        for mb in MICRO_BATCHES:
            report = run(scenario, f"plan.micro_batch_size={mb}")
            if report and (best is None or report["iteration_time_s"] < best[1]["iteration_time_s"]):
                best = (mb, report)
        if best is None:
            print(f"{scenario.name:28} no micro-batch of {MICRO_BATCHES} gives a valid plan")
            continue
        mb, report = best
        t = report["iteration_time_s"]
        pub, sim = float(row["reported_tflops_per_gpu"]), narayanan_tflops(row, t)
        errors.append(100 * (sim - pub) / pub)
        print(f"{scenario.name:28} {row['gpus']:>5} {mb:3d} {t:9.2f} {pub:12.0f} {sim:12.1f} {errors[-1]:+7.1f}")
    if errors:
        print(f"mean |error| {sum(abs(e) for e in errors) / len(errors):.1f}%, max {max(errors, key=abs):+.1f}%")


def korthikanti():
    print(f"{'scenario':40} {'time pub':>9} {'time sim':>9} {'err %':>7} {'MFU pub':>8} {'MFU sim':>8} {'pts':>6}")
    outside = []
    for name, (t_pub, mfu_pub) in PUBLISHED.items():
        out = subprocess.run([BINARY, "run", str(ROOT / "scenarios/megatron" / name), "--json"],
                             check=True, capture_output=True, text=True)
        report = json.loads(out.stdout)
        t_sim, mfu_sim = report["iteration_time_s"], report["mfu"]
        err = 100 * (t_sim - t_pub) / t_pub
        pts = "" if mfu_pub is None else f"{100 * (mfu_sim - mfu_pub):+6.2f}"
        if mfu_pub is not None and abs(mfu_sim - mfu_pub) > 0.03:
            outside.append(name)
        mfu_p = "" if mfu_pub is None else f"{mfu_pub:8.3f}"
        print(f"{name:40} {t_pub:9.2f} {t_sim:9.2f} {err:+7.1f} {mfu_p:>8} {mfu_sim:8.3f} {pts:>6}")
    print("MFU within 3 points on every row" if not outside else f"MFU more than 3 points off: {', '.join(outside)}")


def main():
    korthikanti()
    narayanan()


if __name__ == "__main__":
    main()
