#!/usr/bin/env bash
# Command 2 of the README: install what is needed, build every target, and run every test
# (GoogleTest through ctest, the golden and determinism tests, pytest), then the suite again under
# AddressSanitizer and UndefinedBehaviorSanitizer and the fuzzers. About 20 minutes from a fresh
# clone on a 2-core machine with a cold compiler cache, under 10 with a warm one.
#   MEGASIM_CHECK_OPTIMIZED=1 also builds the LTO + PGO executable and checks that its reports are
#   byte-identical to the test build's (scripts/check_optimized.sh; about 5 minutes more).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase() { printf '\n== [%d s] %s\n' "$((SECONDS - started))" "$*"; }

phase "installing what the build and the tests need (scripts/install_deps.sh)"
bash scripts/install_deps.sh
phase "format check"
bash scripts/check_format.sh
phase "building every target into build/ (scripts/build.sh all)"
bash scripts/build.sh all
phase "running the tests (ctest --test-dir build)"
ctest --test-dir build --output-on-failure -j "$(nproc)" -LE timing
phase "the suite under ASan and UBSan, and the fuzzers (scripts/test_sanitized.sh)"
bash scripts/test_sanitized.sh
if [ "${MEGASIM_CHECK_OPTIMIZED:-0}" = 1 ]; then
  phase "the optimised executable's reports against the test build's (scripts/check_optimized.sh)"
  bash scripts/check_optimized.sh
fi
phase "all tests passed"
