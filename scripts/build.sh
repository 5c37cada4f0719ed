#!/usr/bin/env bash
# Configures and builds megasim into build/ (Release, warnings as errors). Uses ccache when present.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEGASIM_WARNINGS_AS_ERRORS=ON \
      -DPython_EXECUTABLE="$PWD/.venv/bin/python" "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)"
