#!/usr/bin/env bash
# The device check for a lent GPU machine (DEVELOPERS.md "device"): the CUDA backend's GPU tests,
# `megasim calibrate --backend cuda` on the 175B MegaScale plan's GEMMs (twice, to see the run-to-run
# spread) and on the Megatron baseline's, and PyTorch reference measurements (GEMM, FlashAttention-2,
# one 175B TP-8 shard layer). Binaries are built on the developer machine and carried
# (build-cuda/cli/megasim, build-cuda/tests/backend/megasim_cuda_tests, and in .devlibs the fmt and
# toml++ libraries they link, and since the cpu backend Open MPI: scripts/device/collect_devlibs.sh);
# cuBLASLt and NCCL are the device's own. Outputs under $OUT (8 files).
set -uo pipefail
source scripts/device/device_env.sh
build-cuda/tests/backend/megasim_cuda_tests 2>&1 | tee "$out/cuda_tests.log"
scenario=scenarios/megascale/175b_megascale.toml
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  build-cuda/cli/megasim calibrate --backend cuda "$scenario" --out "$out/h200_calibration.toml"
} 2>>"$out/errors.log" | tee "$out/calibrate.txt"
build-cuda/cli/megasim calibrate --backend cuda "$scenario" --json > "$out/calibrate_repeat.json" 2>>"$out/errors.log"
build-cuda/cli/megasim calibrate --backend cuda scenarios/megascale/175b_megatron.toml --json \
  > "$out/calibrate_megatron.json" 2>>"$out/errors.log"
export PYTHONUNBUFFERED=1
timeout 240 python3 scripts/device/torch_reference.py 2>>"$out/errors.log" | tee "$out/torch_reference.json"
timeout 240 python3 scripts/device/torch_layer.py 2>>"$out/errors.log" | tee "$out/torch_layer.json"
