"""Shared helpers of the Python tests: the CLI (MEGASIM_BINARY, set by ctest) and a small scenario."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# 64 GPUs, TP 2 x PP 2 x DP 16, a 4-layer GPT: an iteration simulates in milliseconds.
SMALL = ROOT / "tests" / "data" / "campaign_small.toml"


def cli(*args, check=True):
    """Runs the megasim CLI; returns the CompletedProcess (text)."""
    return subprocess.run([os.environ["MEGASIM_BINARY"], *map(str, args)], check=check, capture_output=True, text=True)


def cli_json(*args):
    return json.loads(cli(*args, "--json").stdout)


def cli_error(*args):
    """The message of a CLI input error (exit code 2, "megasim: error: MESSAGE" on stderr)."""
    out = cli(*args, check=False)
    assert out.returncode == 2, out.stderr
    prefix = "megasim: error: "
    assert out.stderr.startswith(prefix), out.stderr
    return out.stderr[len(prefix):].strip()


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    data = open(path, "rb").read()
    assert len(data) > len(PNG_SIGNATURE) and data.startswith(PNG_SIGNATURE), path


def plot_cli(*args):
    """python -m megasim.plot ARGS, with this test's environment (PYTHONPATH from ctest)."""
    return subprocess.run([sys.executable, "-m", "megasim.plot", *map(str, args)], capture_output=True, text=True,
                          env=os.environ)


@pytest.fixture(scope="session")
def small_run_dir(tmp_path_factory):
    """`megasim run SMALL --out DIR --max-trace-ranks 0`: report.json and a trace of every rank."""
    directory = tmp_path_factory.mktemp("run")
    cli("run", SMALL, "--out", directory, "--max-trace-ranks", "0")
    return directory
