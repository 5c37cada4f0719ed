#!/usr/bin/env python3
"""megasim's prediction of MegaScale's ablation (Jiang et al., NSDI'24 §6.1; the inputs in
../shared/calibration/megascale_setup.md, the results deliberately not here): the 175B model on 256
GPUs at a global batch of 256, from the Megatron-LM baseline (scenarios/megascale/175b_megatron.toml)
with MegaScale's optimisations added one at a time in the paper's order, and last LAMB, whose
larger batch (768) the same plan trains with. Each row is the median over --samples draws (the
production profile's slow hosts and garbage-collection phases, the ECMP hash seeds), its MFU in
megasim's convention and counting full attention (the sliding window changes the two), and its gain
over the row before in MFU points.
Usage: python3 scripts/ablation_megascale.py [--binary path/to/megasim] [--samples N] [--json]"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import predict_megascale  # noqa: E402  (its `run`: one `megasim run --json` of a MegaScale scenario)

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPUS, BATCH, LAMB_BATCH = 256, 256, 768
# Each step's overrides on top of the steps before it: the keys of 175b_megascale.toml.
STEPS = [
    ("Megatron-LM baseline", []),
    ("+ parallel transformer block", ["plan.parallel_transformer_block=true"]),
    ("+ sliding window attention", ["plan.sliding_window_size=1024"]),
    ("+ TP overlap", ["plan.tp_comm_overlap=true"]),
    ("+ PP overlap", ["plan.overlap_p2p_comm=true"]),
    ("+ DP overlap", ["plan.overlap_grad_reduce=true", "plan.overlap_param_gather=true"]),
    ("+ efficient operators", ["plan.use_flash_attention=true"]),
    ("+ misc", ["plan.async_data_loading=true", "plan.average_loss_per_micro_batch=false",
                "stragglers.gc_pause_s=0", "stragglers.gc_period_s=0"]),
]


def mfu_of(report):
    """(MFU, MFU counting full attention): the median sample's when the report has samples."""
    ratio = report["samples"]["mfu"]["median"] / report["mfu"] if "samples" in report else 1.0
    full = report.get("mfu_full_attention", report["mfu"])
    return report["mfu"] * ratio, full * ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(ROOT / "build/cli/megasim"))
    parser.add_argument("--samples", type=int, default=5, help="draws per row; the median is reported")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows, overrides = [], []
    steps = STEPS + [(f"+ LAMB (batch {LAMB_BATCH})", [])]
    for i, (name, step) in enumerate(steps):
        overrides += step
        batch = LAMB_BATCH if i == len(STEPS) else BATCH
        report = predict_megascale.run(args.binary, "175b", "megatron", GPUS, batch, args.samples, overrides)
        mfu, full = mfu_of(report)
        rows.append({"step": name, "global_batch_size": batch, "mfu": mfu, "mfu_full_attention": full,
                     "gain": mfu - rows[-1]["mfu"] if rows else 0.0})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"175B on {GPUS} GPUs, MFU % (median of {args.samples} draws)")
    print(f"{'step':32} {'batch':>5} {'MFU':>6} {'full attn':>9} {'gain':>6}")
    for r in rows:
        print(f"{r['step']:32} {r['global_batch_size']:5} {100 * r['mfu']:6.2f} {100 * r['mfu_full_attention']:9.2f} "
              f"{100 * r['gain']:+6.2f}")


if __name__ == "__main__":
    main()
