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
# Depend mode: a miss compiles once (the dependencies from -MD), without a separate preprocessor run.
export CCACHE_DEPEND=1
# The line tables (-gline-tables-only) name the build folder, which ccache would otherwise hash, so
# that a clone in another folder missed every object.
export CCACHE_NOHASHDIR=1
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-san -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DMEGASIM_SANITIZE=address,undefined \
      -DMEGASIM_FUZZ=ON -DMEGASIM_LTO=OFF -DMEGASIM_BUILD_BENCH=OFF -DMEGASIM_BUILD_PYTHON=OFF \
      -DMEGASIM_WITH_CUDA=OFF -DMEGASIM_CPU_NATIVE=OFF -DMEGASIM_WARNINGS_AS_ERRORS=ON "${launcher[@]}" >/dev/null
cmake --build build-san -j "$(nproc)"

asan=abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
# Tests that start Open MPI jobs run without leak detection (tests/sanitizers/lsan.supp says why).
# Not here: the timing acceptance, which compares measured with predicted times (meaningless at
# sanitizer speed), and the CLI's whole-iteration runs on the cpu backend (Cli.*OnTheCpuBackend*
# but its bad inputs), which take 14x their time in build/ under the sanitizers (85 s against 6 s
# for `run --backend cpu`) and run there; the backend's executor, kernels, collectives and launch
# run here in megasim_cpu_tests and cpu_backend_mpi_job. Nor the whole-iteration simulations of the
# shipped Llama 3 runs (8,192 and 16,384 GPUs in 128 one-layer chunks each: about 290 s each here
# against 10 s in build/, where they run); the same schedule, workload and executor code runs here
# on the small pipelines of GroupedScheduleStudy and the other study tests.
mpi='cpu_backend|CpuBackend|OnTheCpuBackend'
not_here='cpu_backend_validate_acceptance|Cli\.(RunOnTheCpuBackendReports|ValidateOnTheCpuBackend|WhatIfAnalysesATraceMeasuredOnTheCpuBackend)'
not_here+='|Llama3Scenarios\.TwiceTheGpusForTheSameBatchGrowTheBubbleShare|ContextParallelStudy\.Llama3LongContextRunResolvesAsPublished'
ASAN_OPTIONS=detect_leaks=1:$asan ctest --test-dir build-san --output-on-failure -j "$(nproc)" \
    -E "$not_here|$mpi"
ASAN_OPTIONS=detect_leaks=0:$asan ctest --test-dir build-san --output-on-failure -j "$(nproc)" \
    -R "$mpi" -E "$not_here"
export ASAN_OPTIONS=detect_leaks=1:$asan

# The fuzzers side by side, one per core: each runs for its own fuzz_seconds, so all six take
# ceil(6 / cores) x fuzz_seconds. The dictionary of extreme numbers and key names serves the targets
# that read keys. An input is a hang after 60 s: the largest work the bounds admit is slow, not
# endless, under the sanitizers and the coverage (a day's campaign of 16 GPUs at
# failures.rate_scale=10000 and gpu_mtbf_h=4: just under the 10^6 events a seed may have, 1.5 s in
# build/, more than 10 s here).
run_fuzzer() {
  local target=$1
  local corpus=build-san/fuzz-corpus-$target  # new inputs go here, not into the source tree
  local seeds=(tests/fuzz/corpus/$target) dict=() status=0
  mkdir -p "$corpus"
  [ "$target" = scenario ] && seeds+=(scenarios/megascale scenarios/megatron)
  case $target in scenario | override | numbers) dict=(-dict=tests/fuzz/numbers.dict) ;; esac
  build-san/tests/fuzz/fuzz_$target -max_total_time="$fuzz_seconds" -timeout=60 -rss_limit_mb=4096 "${dict[@]}" \
      -print_final_stats=1 -artifact_prefix="build-san/fuzz-$target-" "$corpus" "${seeds[@]}" \
      > "build-san/fuzz-$target.log" 2>&1 || status=$?
  echo "fuzzed $target for ${fuzz_seconds} s: $([ $status -eq 0 ] && echo ok || echo "FAILED (exit $status)")"
  tail -12 "build-san/fuzz-$target.log"
  return $status
}
jobs=$(nproc)
running=()
failed=0
for target in scenario override trace binary_trace output_path numbers; do
  run_fuzzer "$target" &
  running+=($!)
  if [ "${#running[@]}" -ge "$jobs" ]; then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
done
for pid in "${running[@]}"; do wait "$pid" || failed=1; done
exit $failed
