#!/usr/bin/env bash
# Copies into .devlibs/ the shared libraries the carried binaries need that a bare GPU machine may
# lack (fmt, toml++, Open MPI and its dependencies: everything ldd resolves outside glibc, the C++
# runtime and the CUDA driver), so that scripts/device/*.sh can run them there with
# LD_LIBRARY_PATH=.devlibs. cuBLASLt and NCCL are the device's own (opened with dlopen). Build the
# binaries for another machine's processor first: -DMEGASIM_CPU_NATIVE=OFF.
# Usage: scripts/device/collect_devlibs.sh build-cuda/cli/megasim build-cuda/tests/backend/megasim_cuda_tests
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devlibs
for binary in "$@"; do
  ldd "$binary" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libstdc++.so* | libgcc_s.so* | libcuda.so*) ;;
      *) cp -L -n "$lib" .devlibs/ ;;
    esac
  done
done
ls .devlibs
