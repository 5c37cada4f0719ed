#!/usr/bin/env bash
# Configures and builds megasim into build/ (Release, warnings as errors). Uses ccache when present.
# With GCC, a profile-guided build (CMakeLists.txt, MEGASIM_PGO): the megasim executable is built
# instrumented into build-pgo/ first and runs the training scenarios below (about 40 s), then build/
# is built with their profile. MEGASIM_PGO=off in the environment skips that.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
pgo=${MEGASIM_PGO:-use}
if [ "$pgo" = use ] && ! c++ -v 2>&1 | grep -q "^gcc version"; then pgo=off; fi
if [ "$pgo" = use ]; then
  cmake -S . -B build-pgo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEGASIM_PGO=generate -DMEGASIM_PGO_DIR="$PWD/.pgo" \
        -DMEGASIM_BUILD_TESTS=OFF -DMEGASIM_BUILD_BENCH=OFF -DMEGASIM_BUILD_PYTHON=OFF -DMEGASIM_WITH_CUDA=OFF \
        "${launcher[@]}" >/dev/null
  cmake --build build-pgo --target megasim -j "$(nproc)"
  rm -rf .pgo
  # Training: the iteration at MegaScale's scale with and without its optimisations, a smaller
  # cluster with interleaving and DP overlap off (what `run` spends its time on), and what a sweep
  # spends its time on: a plan whose pipeline transfers collide all the time (PP 4, 2-layer chunks:
  # region re-solves) and the screens of every plan on 3,072 GPUs (DP rings).
  for args in "scenarios/megascale/175b_megascale.toml" "scenarios/megascale/175b_megatron.toml" \
              "scenarios/megascale/175b_megascale.toml --set cluster.gpus=3072" \
              "scenarios/megascale/175b_megascale.toml --set plan.pipeline_model_parallel_size=4 --set plan.num_layers_per_virtual_pipeline_stage=2"; do
    # shellcheck disable=SC2086
    build-pgo/cli/megasim run $args >/dev/null
  done
  # One thread: the instrumented counters are not atomic, and racing threads corrupt the profile.
  build-pgo/cli/megasim sweep scenarios/megascale/175b_megascale.toml --gpus 3072 --confirm-top 1 --threads 1 >/dev/null
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEGASIM_WARNINGS_AS_ERRORS=ON -DMEGASIM_PGO="$pgo" \
      -DMEGASIM_PGO_DIR="$PWD/.pgo" -DPython_EXECUTABLE="$PWD/.venv/bin/python" "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)"
