#!/usr/bin/env bash
# Installs what megasim needs to build and test on a fresh Debian 12 machine (run as root, or with
# sudo available): the compiler toolchain's libraries from Debian and a project venv from PyPI.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config ccache
          libfmt-dev libtomlplusplus-dev libboost-graph-dev libeigen3-dev libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev pybind11-dev python3-venv
          libopenmpi-dev openmpi-bin
          clang libclang-rt-14-dev)  # the sanitized test run and libFuzzer (scripts/test_sanitized.sh)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "megasim: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The project's Python environment: pytest for the binding tests, pandas and matplotlib for
# megasim.plot, dask.distributed and Ray for sweeps (requirements-dev.txt).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import pytest, pandas, matplotlib, distributed, ray" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-dev.txt
fi
