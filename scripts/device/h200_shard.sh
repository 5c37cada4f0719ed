#!/usr/bin/env bash
# Prepared for the next lent GPU machine (not yet run): the cuda backend's GPU tests, then shard-mode
# validation of the 175B MegaScale plan on one H200: the compute of rank 0 of pipeline stage 0 and of
# the last stage (7, with the logits), run for real (backend/cuda/shard_runner.h) and predicted with
# the measured H200 calibration, per task category. About 25 s of GPU time per stage (one warm-up and
# three measured iterations of ~5 s of compute). Carry build-cuda/cli/megasim,
# build-cuda/tests/backend/megasim_cuda_tests and .devlibs (scripts/device/collect_devlibs.sh; build
# with -DMEGASIM_CPU_NATIVE=OFF). Outputs under $OUT.
set -uo pipefail
source scripts/device/device_env.sh
timeout 120 build-cuda/tests/backend/megasim_cuda_tests 2>&1 | tee "$out/cuda_tests.log"
for stage in 0 7; do
  timeout 150 build-cuda/cli/megasim validate scenarios/megascale/175b_megascale.toml --backend cuda --stage "$stage" \
    --set cluster.gpu=H200 --set calibration.file=scenarios/calibration/h200_measured.toml --iterations 3 \
    --out "$out/shard_stage$stage" 2>>"$out/errors.log" | tee "$out/shard_stage$stage.txt"
done
