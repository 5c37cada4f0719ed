#!/usr/bin/env bash
# `pip install SRC` into a fresh venv, then the installed package and the installed megasim script
# give the same report. Slow (PyPI downloads and a from-scratch Release build of the module and the
# command line; see README "Python"), so it runs only with MEGASIM_TEST_PIP_INSTALL=1 in the
# environment; otherwise it exits 77, which ctest reports as skipped.
# Usage: pip_install_test.sh PYTHON SRC
set -euo pipefail
if [ "${MEGASIM_TEST_PIP_INSTALL:-}" != 1 ]; then
  echo "skipped: set MEGASIM_TEST_PIP_INSTALL=1 to test pip install"
  exit 77
fi
python=$1
src=$2
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
start=$(date +%s)
"$venv/bin/python" -m pip install -q "$src"
echo "pip install took $(($(date +%s) - start)) s"
cd "$venv"  # import the installed package, not a source or build tree
PYTHONPATH= "$venv/bin/python" - "$src/tests/data/campaign_small.toml" <<'PY'
import json, os, subprocess, sys

import megasim

assert os.path.dirname(megasim.__file__).startswith(sys.prefix), megasim.__file__
report = megasim.run(megasim.load(sys.argv[1]))
cli = subprocess.run([os.path.join(sys.prefix, "bin", "megasim"), "run", sys.argv[1], "--json"],
                     check=True, capture_output=True, text=True)
assert report == json.loads(cli.stdout)
print("installed megasim: run gives the CLI's report,", round(report.tokens_per_s), "tokens/s")
PY
