#!/usr/bin/env python3
"""What each production mechanism costs MegaScale's 175B plan (scenarios/megascale/175b_*.toml) at
256 GPUs (global batch 768) and 12,288 GPUs (6,144), as issue 26 asks: the shipped scenario (its
production profile), then the same with one mechanism switched off at a time, then with all of them
off (the ideal cluster). Each row is the median over --samples draws (`megasim run --samples`: slow
hosts and ECMP hash seeds drawn per sample), and its change against the shipped row in MFU points.
Mechanisms:
  slow hosts         [stragglers] slow_host_fraction of the scenario (MegaScale's 0.5% of servers
                     10% slower)
  GC pauses          [stragglers] gc_period_s and gc_pause_s (the Megatron-LM baseline's unplanned
                     garbage collection; MegaScale's scenarios have none)
  ECMP collisions    fabric.routing = adaptive instead of ecmp (each flow on its least-loaded path;
                     spray would be exact but takes minutes to simulate at thousands of GPUs)
  host overheads     launch_overhead_us, host_sync_gap_us, get_batch_host_us = 0 in the calibration
The breakdown of the shipped run (bubble, exposed TP/PP/DP, waiting for other ranks) follows.
Usage: python3 scripts/production_effects.py [--binary path/to/megasim] [--samples N] [--system megascale|megatron]"""
import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import predict_megascale  # noqa: E402  (its `run`: one `megasim run --json` of a MegaScale scenario)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIZES = ((256, 768), (12288, 6144))
HOST_OVERHEADS = ("launch_overhead_us", "host_sync_gap_us", "get_batch_host_us")


def zero_overhead_calibration(folder):
    """The scenarios' public calibration with the host's launch and synchronisation gaps at zero."""
    text = (ROOT / "scenarios/calibration/a100_public.toml").read_text()
    lines = [line for line in text.splitlines() if line.split("=")[0].strip() not in HOST_OVERHEADS]
    at = lines.index("[compute]") + 1
    lines[at:at] = [f"{key} = 0" for key in HOST_OVERHEADS]
    path = pathlib.Path(folder) / "no_host_overheads.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def shipped_mfu(binary, system, gpus, batch, samples, overrides):
    """The run's MFU (the median over its samples) and its report."""
    report = predict_megascale.run(binary, "175b", system, gpus, batch, samples, overrides)
    return (report["samples"]["mfu"]["median"] if "samples" in report else report["mfu"]), report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(ROOT / "build/cli/megasim"))
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--system", choices=("megascale", "megatron"), default="megascale")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        calibration = zero_overhead_calibration(folder)
        off = {"slow hosts": ["stragglers.slow_host_fraction=0"],
               "GC pauses": ["stragglers.gc_pause_s=0", "stragglers.gc_period_s=0"],
               "ECMP collisions": ["fabric.routing=adaptive"],
               "host overheads": [f"calibration.file={calibration}"]}
        off["all (ideal cluster)"] = ["stragglers.enabled=false"] + off["ECMP collisions"] + off["host overheads"]
        for gpus, batch in SIZES:
            shipped, report = shipped_mfu(args.binary, args.system, gpus, batch, args.samples, [])
            print(f"175B {args.system}, {gpus} GPUs, batch {batch}: shipped MFU {100 * shipped:.2f}% "
                  f"(median of {args.samples})")
            for name, overrides in off.items():
                mfu, _ = shipped_mfu(args.binary, args.system, gpus, batch, args.samples, overrides)
                print(f"  {name:22} costs {100 * (mfu - shipped):5.2f} MFU points (MFU without it {100 * mfu:.2f}%)")
            mean = report["breakdown"]["mean"]
            shares = ", ".join(f"{k.removesuffix('_s')} {100 * v / mean['total_s']:.1f}%" for k, v in mean.items()
                               if k not in ("compute_s", "total_s"))
            print(f"  shipped run's mean breakdown (share of the iteration): {shares}")


if __name__ == "__main__":
    main()
