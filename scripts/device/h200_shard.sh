#!/usr/bin/env bash
# Prepared for the next lent GPU machine (not yet run): the cuda backend's GPU tests (shard runner, FlashAttention-2
# kernels against a host reference, the whole-plan executor and its watchdog where 2 GPUs are seen), then shard-mode
# validation of the 175B MegaScale plan on one H200: the compute of rank 0 of pipeline stage 0 and of
# the last stage (7, with the logits), run for real (backend/cuda/shard_runner.h) and predicted with
# the measured H200 calibration, per task category. About 25 s of GPU time per stage (one warm-up and
# three measured iterations of ~5 s of compute). Carry build-cuda/cli/megasim,
# build-cuda/tests/backend/megasim_cuda_tests and .devlibs (scripts/device/collect_devlibs.sh; build
# with -DMEGASIM_CPU_NATIVE=OFF). Outputs under $OUT. Last, the calibration with FP8 GEMMs beside bf16 (~30 s).
set -uo pipefail
source scripts/device/device_env.sh
timeout 120 build-cuda/tests/backend/megasim_cuda_tests 2>&1 | tee "$out/cuda_tests.log"
for stage in 0 7; do
  timeout 150 build-cuda/cli/megasim validate scenarios/megascale/175b_megascale.toml --backend cuda --stage "$stage" \
    --set cluster.gpu=H200 --set calibration.file=scenarios/calibration/h200_measured.toml --iterations 3 \
    --out "$out/shard_stage$stage" 2>>"$out/errors.log" | tee "$out/shard_stage$stage.txt"
done
# A whole plan on one GPU (backend/cuda/rank_executor.h with a world of one: NCCL communicator,
# streams, events, watchdog), unfused and with the fused FlashAttention-2 kernels, predicted with the
# same calibration.
for flash in false true; do
  timeout 90 build-cuda/cli/megasim validate scenarios/validate/tiny_gpt_dp2.toml --backend cuda --iterations 5 \
    --set cluster.gpus=1 --set cluster.gpus_per_server=1 --set plan.global_batch_size=8 --set cluster.gpu=H200 \
    --set calibration.file=scenarios/calibration/h200_measured.toml --set plan.use_flash_attention=$flash \
    --out "$out/whole_plan_flash_$flash" 2>>"$out/errors.log" | tee "$out/whole_plan_flash_$flash.txt"
done
# FP8 E4M3 GEMMs beside bf16 (issue 27, item 6): the calibration of the 175B MegaScale plan's GEMMs on
# the H200, the curve-fit shapes and the plan's GEMMs timed again with FP8 operands; the file it
# writes carries fp8_gemm_efficiency_scale (scenarios/studies/calibrate/calibrate_study.h). About 30 s.
timeout 180 build-cuda/cli/megasim calibrate --backend cuda scenarios/megascale/175b_megascale.toml --gpu H200 \
  --out "$out/h200_calibration_fp8.toml" --json > "$out/calibrate_fp8.json" 2>>"$out/errors.log"
