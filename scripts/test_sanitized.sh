#!/usr/bin/env bash
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer, then each fuzz target for a
# bounded time (MEGASIM_FUZZ_SECONDS, default 20 s each), in build-san/ with Clang. Part of
# scripts/test.sh; run alone after scripts/install_deps.sh. Inputs a fuzzer finds that crash are
# written to build-san/fuzz-<target>-crash-*; copy them into tests/fuzz/corpus/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${MEGASIM_FUZZ_SECONDS:-20}
export CCACHE_BASEDIR="$PWD"
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-san -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DMEGASIM_SANITIZE=address,undefined \
      -DMEGASIM_FUZZ=ON -DMEGASIM_LTO=OFF -DMEGASIM_BUILD_BENCH=OFF -DMEGASIM_BUILD_PYTHON=OFF \
      -DMEGASIM_WITH_CUDA=OFF -DMEGASIM_CPU_NATIVE=OFF "${launcher[@]}" >/dev/null
cmake --build build-san -j "$(nproc)"

asan=abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
# Tests that start Open MPI jobs run without leak detection (tests/sanitizers/lsan.supp says why).
# Timing acceptance compares measured with predicted times: meaningless at sanitizer speed.
mpi='cpu_backend|CpuBackend|OnTheCpuBackend'
ASAN_OPTIONS=detect_leaks=1:$asan ctest --test-dir build-san --output-on-failure -j "$(nproc)" \
    -E "cpu_backend_validate_acceptance|$mpi"
ASAN_OPTIONS=detect_leaks=0:$asan ctest --test-dir build-san --output-on-failure -j "$(nproc)" \
    -R "$mpi" -E cpu_backend_validate_acceptance
export ASAN_OPTIONS=detect_leaks=1:$asan

for target in scenario override trace output_path numbers; do
  corpus=build-san/fuzz-corpus-$target  # new inputs go here, not into the source tree
  mkdir -p "$corpus"
  seeds=(tests/fuzz/corpus/$target)
  [ "$target" = scenario ] && seeds+=(scenarios/megascale scenarios/megatron)
  echo "fuzzing $target for ${fuzz_seconds} s"
  build-san/tests/fuzz/fuzz_$target -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=4096 \
      -dict=tests/fuzz/numbers.dict \
      -print_final_stats=1 -artifact_prefix="build-san/fuzz-$target-" "$corpus" "${seeds[@]}" 2>&1 | tail -12
  [ "${PIPESTATUS[0]}" -eq 0 ]
done
