#!/usr/bin/env bash
# Command 2 of the README: install what is needed, build, and run every test. Three builds:
# - build/ (GCC, -O3, warnings as errors): the executable, the Python module, the benchmarks and the
#   CUDA backend; there the tests of what users run: the CLI tests (the golden, determinism, scale
#   and hostile-input catalogues), pytest, the cpu backend's validation acceptance, the CUDA tests
#   (skipped without a GPU);
# - build-sim/ (as build/, MEGASIM_WITH_MPI=OFF): the simulator alone, its golden reports;
# - build-san/ (Clang, AddressSanitizer + UndefinedBehaviorSanitizer): every test, the per-library
#   GoogleTest binaries among them, then the fuzzers (scripts/test_sanitized.sh).
# 10-20 minutes from a fresh clone on a 2-core machine with a cold compiler cache (9 min 19 s on
# 2026-12-02's fifth session), 7-11 with a warm one (docs/building.md).
#   MEGASIM_CHECK_OPTIMIZED=1 also builds the LTO + PGO executable and checks that its reports are
#   byte-identical to the test build's (scripts/check_optimized.sh; about 5 minutes more).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase() { printf '\n== [%d s] %s\n' "$((SECONDS - started))" "$*"; }

phase "installing the Debian packages (scripts/install_deps.sh packages); the venv's Python packages while the build compiles"
bash scripts/install_deps.sh packages
bash scripts/install_deps.sh python > .venv-install.log 2>&1 &
python_install=$!
phase "format check"
bash scripts/check_format.sh
phase "building the executable, the Python module, the benchmarks and the CLI tests into build/ (scripts/build.sh ci)"
bash scripts/build.sh ci
if ! wait "$python_install"; then
  cat .venv-install.log
  echo "megasim: installing the venv's Python packages failed (scripts/install_deps.sh python)" >&2
  exit 1
fi
phase "running the tests of build/ (ctest --test-dir build)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
phase "the simulator-only build without MPI (scripts/build.sh simulator): its golden reports, its backends"
bash scripts/build.sh simulator
bash tests/golden/run_golden.sh build-sim/cli/megasim
build-sim/cli/megasim backends | grep -q "^  cpu    not built (configured with MEGASIM_WITH_MPI=OFF"
phase "every test under ASan and UBSan, then the fuzzers (scripts/test_sanitized.sh)"
bash scripts/test_sanitized.sh
if [ "${MEGASIM_CHECK_OPTIMIZED:-0}" = 1 ]; then
  phase "the optimised executable's reports against the test build's (scripts/check_optimized.sh)"
  bash scripts/check_optimized.sh
fi
phase "all tests passed"
