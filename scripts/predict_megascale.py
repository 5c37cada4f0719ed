#!/usr/bin/env python3
"""megasim's predictions for every published MegaScale run (Jiang et al., NSDI'24; the inputs in
../shared/calibration/megascale_setup.md, the results deliberately not here): the 175B model's strong
scaling (256-1,024 GPUs at a global batch of 768, 3,072-12,288 at 6,144) and the 530B model's weak
scaling (2,240-11,200 GPUs, global batch = GPUs), each as Megatron-LM ran it and with MegaScale's
optimisations (scenarios/megascale/). Prints iteration time, tokens/s and MFU (megasim's convention,
and the paper's full-attention one where the report has it), and with --json the rows as data.
The scenarios' production profile draws slow hosts from the seed; --samples N gives each row's median
over N draws (`megasim run --samples`) and its 5th-95th percentile instead of the one seed's value.
Usage: python3 scripts/predict_megascale.py [--binary path/to/megasim] [--json] [--samples N] [--set KEY=VALUE ...]"""
import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = [("175b", gpus, 768) for gpus in (256, 512, 768, 1024)] + \
       [("175b", gpus, 6144) for gpus in (3072, 6144, 8192, 12288)] + \
       [("530b", gpus, gpus) for gpus in (2240, 4480, 11200)]
SYSTEMS = ("megatron", "megascale")


def run(binary, model, system, gpus, batch, samples, overrides):
    args = [binary, "run", str(ROOT / f"scenarios/megascale/{model}_{system}.toml"), "--json",
            "--set", f"cluster.gpus={gpus}", "--set", f"plan.global_batch_size={batch}"]
    if samples > 1:
        args += ["--samples", str(samples)]
    for o in overrides:
        args += ["--set", o]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(ROOT / "build/cli/megasim"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--samples", type=int, default=1, help="draws per row; the median is reported")
    parser.add_argument("--set", action="append", default=[], help="an override for every run")
    args = parser.parse_args()
    rows = []
    for model, gpus, batch in RUNS:
        for system in SYSTEMS:
            r = run(args.binary, model, system, gpus, batch, args.samples, args.set)
            row = {"model": model, "system": system, "gpus": gpus, "global_batch_size": batch,
                   "gpu": r["gpu"], "iteration_time_s": r["iteration_time_s"],
                   "tokens_per_s": r["tokens_per_s"], "mfu": r["mfu"],
                   "mfu_full_attention": r.get("mfu_full_attention"), "mfu_p5": r["mfu"], "mfu_p95": r["mfu"]}
            if "samples" in r:
                # Both MFU conventions divide the same tokens by the time: the full-attention one
                # scales with the median as the headline does.
                spread = r["samples"]["mfu"]
                ratio = spread["median"] / r["mfu"]
                row.update(mfu=spread["median"], mfu_p5=spread["p5"], mfu_p95=spread["p95"],
                           iteration_time_s=r["samples"]["iteration_time_s"]["median"],
                           tokens_per_s=r["tokens_per_s"] * ratio)
                if row["mfu_full_attention"] is not None:
                    row["mfu_full_attention"] *= ratio
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'model':6} {'system':10} {'GPUs':>6} {'batch':>6} {'GPU':14} {'iteration s':>11} {'tokens/s':>10} "
          f"{'MFU %':>6} {'5-95%':>11} {'MFU full attn %':>15}")
    for r in rows:
        full = "" if r["mfu_full_attention"] is None else f"{100 * r['mfu_full_attention']:.1f}"
        print(f"{r['model']:6} {r['system']:10} {r['gpus']:6} {r['global_batch_size']:6} {r['gpu']:14} "
              f"{r['iteration_time_s']:11.2f} {r['tokens_per_s']:10.0f} {100 * r['mfu']:6.1f} "
              f"{100 * r['mfu_p5']:5.1f}-{100 * r['mfu_p95']:4.1f} {full:>15}")


if __name__ == "__main__":
    main()
