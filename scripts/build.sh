#!/usr/bin/env bash
# Configures and builds megasim (Release, warnings as errors), with ccache when present.
#   scripts/build.sh main       build/: the megasim executable only (what scripts/run.sh needs)
#   scripts/build.sh [all]      build/: every target: libraries, megasim, the tests, the Python module,
#                               the benchmarks, and the CUDA backend when nvcc and NCCL are found
#   scripts/build.sh ci         build/: the same but the per-library unit tests (MEGASIM_UNIT_TESTS=OFF),
#                               which CI builds and runs under the sanitizers (scripts/test_sanitized.sh)
#   scripts/build.sh simulator  build-sim/: megasim without MPI (MEGASIM_WITH_MPI=OFF): the simulator
#                               alone, no cpu or cuda backend
#   scripts/build.sh optimized  build-opt/: megasim with link-time and (GCC) profile-guided
#                               optimisation, trained on the scenarios below (about 3 minutes more
#                               than `main` from scratch; 6-12% faster simulations, the same reports
#                               to the byte: scripts/check_optimized.sh)
# MEGASIM_WITH_CUDA=AUTO|ON|OFF overrides whether the CUDA/NCCL backend is built (default: OFF for
# main and optimized, AUTO for all and ci).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-all}
# The compiler cache keys on paths relative to the checkout, so fresh clones share it.
export CCACHE_BASEDIR="$PWD"
# The test binaries' precompiled GoogleTest header (tests/CMakeLists.txt) is cacheable with these.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# Depend mode: a miss compiles once (the dependencies from -MD), without a separate preprocessor run.
export CCACHE_DEPEND=1
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMEGASIM_WARNINGS_AS_ERRORS=ON "${launcher[@]}")
only_megasim=(-DMEGASIM_BUILD_TESTS=OFF -DMEGASIM_BUILD_BENCH=OFF -DMEGASIM_BUILD_PYTHON=OFF)

case "$kind" in
  main)
    cmake -S . -B build "${common[@]}" "${only_megasim[@]}" -DMEGASIM_LTO=OFF -DMEGASIM_PGO=off \
          -DMEGASIM_WITH_CUDA="${MEGASIM_WITH_CUDA:-OFF}" >/dev/null
    cmake --build build --target megasim -j "$(nproc)"
    ;;
  simulator)
    # The simulator alone, without MPI (so without the cpu and cuda backends), as `pip install .` builds
    # it on a machine without Open MPI: CI checks that this configuration builds and reports the same.
    cmake -S . -B build-sim "${common[@]}" "${only_megasim[@]}" -DMEGASIM_LTO=OFF -DMEGASIM_PGO=off \
          -DMEGASIM_WITH_MPI=OFF -DMEGASIM_WITH_CUDA=OFF >/dev/null
    cmake --build build-sim --target megasim -j "$(nproc)"
    ;;
  all | ci)
    # CI compiles the CUDA kernels for one architecture (90): a third less of their compile time.
    unit=ON arch="80;90"; [ "$kind" = ci ] && unit=OFF arch=90
    cmake -S . -B build "${common[@]}" -DMEGASIM_BUILD_TESTS=ON -DMEGASIM_UNIT_TESTS=$unit \
          -DMEGASIM_CUDA_ARCHITECTURES="$arch" \
          -DMEGASIM_BUILD_BENCH=ON -DMEGASIM_BUILD_PYTHON=ON \
          -DMEGASIM_LTO=OFF -DMEGASIM_PGO=off -DMEGASIM_WITH_CUDA="${MEGASIM_WITH_CUDA:-AUTO}" \
          -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
    cmake --build build -j "$(nproc)"
    ;;
  optimized)
    cuda=${MEGASIM_WITH_CUDA:-OFF}
    pgo=use
    if ! c++ -v 2>&1 | grep -q "^gcc version"; then pgo=off; fi
    if [ "$pgo" = use ]; then
      # The executable instrumented in build-pgo/, then trained: the iteration at MegaScale's scale with
      # and without its optimisations, a smaller cluster with interleaving and DP overlap off (what `run`
      # spends its time on), and what a sweep spends its time on: a plan whose pipeline transfers collide
      # all the time (PP 4, 2-layer chunks: region re-solves) and the screens of every plan on 3,072 GPUs.
      cmake -S . -B build-pgo "${common[@]}" "${only_megasim[@]}" -DMEGASIM_PGO=generate \
            -DMEGASIM_PGO_DIR="$PWD/.pgo" -DMEGASIM_WITH_CUDA=OFF >/dev/null
      cmake --build build-pgo --target megasim -j "$(nproc)"
      rm -rf .pgo
      for args in "scenarios/megascale/175b_megascale.toml" "scenarios/megascale/175b_megatron.toml" \
                  "scenarios/megascale/175b_megascale.toml --set cluster.gpus=3072" \
                  "scenarios/megascale/175b_megascale.toml --set plan.pipeline_model_parallel_size=4 --set plan.num_layers_per_virtual_pipeline_stage=2"; do
        # shellcheck disable=SC2086
        build-pgo/cli/megasim run $args >/dev/null
      done
      # One thread: the instrumented counters are not atomic, and racing threads corrupt the profile.
      build-pgo/cli/megasim sweep scenarios/megascale/175b_megascale.toml --gpus 3072 --confirm-top 1 --threads 1 >/dev/null
    fi
    cmake -S . -B build-opt "${common[@]}" "${only_megasim[@]}" -DMEGASIM_LTO=ON -DMEGASIM_PGO="$pgo" \
          -DMEGASIM_PGO_DIR="$PWD/.pgo" -DMEGASIM_WITH_CUDA="$cuda" >/dev/null
    cmake --build build-opt --target megasim -j "$(nproc)"
    ;;
  *)
    echo "usage: scripts/build.sh [main|simulator|all|ci|optimized] (got '$kind')" >&2
    exit 2
    ;;
esac
