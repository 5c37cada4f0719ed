#!/usr/bin/env bash
# Installs what megasim needs on a fresh Debian 12 machine (run as root, or with sudo available).
#   scripts/install_deps.sh main   the megasim executable: compiler, CMake, Ninja and the C++ libraries
#   scripts/install_deps.sh        (or `all`) everything the tests need besides: GoogleTest, Google
#                                  Benchmark, pybind11, Clang for the sanitized run and libFuzzer, and the
#                                  project venv (.venv, from requirements-dev.txt)
#   scripts/install_deps.sh packages   all the Debian packages and an empty .venv (what the build needs)
#   scripts/install_deps.sh python     the venv's packages only (what the Python tests need; after
#                                      `packages`, scripts/test.sh runs it while the build compiles)
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-all}

# The megasim executable: the simulator's libraries, and Eigen + Open MPI for the cpu backend that the
# command line always contains.
packages=(cmake ninja-build g++ pkg-config ccache
          libfmt-dev libtomlplusplus-dev libboost-graph-dev libeigen3-dev libcli11-dev rapidjson-dev
          libopenmpi-dev openmpi-bin)
case "$profile" in
  main) ;;
  python) packages=(python3-venv) ;;
  all | packages) packages+=(libgtest-dev libgmock-dev libbenchmark-dev pybind11-dev python3-venv
                  clang libclang-rt-14-dev) ;;  # clang: scripts/test_sanitized.sh (ASan, UBSan, libFuzzer)
  *) echo "usage: scripts/install_deps.sh [main|all|packages|python] (got '$profile')" >&2; exit 2 ;;
esac
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
[ "$profile" = main ] && exit 0

# The project's Python environment: pytest for the binding tests, pandas and matplotlib for
# megasim.plot, dask.distributed and Ray for sweeps (requirements-dev.txt).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
[ "$profile" = packages ] && exit 0
if ! .venv/bin/python -c "import pytest, pandas, matplotlib, distributed, ray" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-dev.txt
fi
