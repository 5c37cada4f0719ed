#!/usr/bin/env bash
# Command 2 of the README: install, build, and run every test (GoogleTest through ctest, pytest),
# then the sanitized run and the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
bash scripts/check_format.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The suite again under AddressSanitizer and UndefinedBehaviorSanitizer, and the fuzz targets for a
# bounded time (build-san/, Clang).
bash scripts/test_sanitized.sh
