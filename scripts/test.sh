#!/usr/bin/env bash
# Command 2 of the README: install, build, and run every test (GoogleTest through ctest, pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
bash scripts/check_format.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
