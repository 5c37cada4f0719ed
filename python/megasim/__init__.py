"""megasim: simulate large-scale LLM training clusters.

Thin Python sugar over the C++ core (_megasim). Errors in inputs raise ValueError with the same
message the command line prints.
"""
import json

from ._megasim import Scenario, keys, load, __version__  # noqa: F401
from . import _megasim


def collective(scenario=None, op="all_reduce", bytes="1GiB", algo="ring", group="", gpus=0):
    """Simulates one collective (or every tp/dp/pp group of the plan when `group` is set) and
    returns the report as a dict with the CLI's JSON keys (op, bytes, gpus, algo, routing, time_s,
    algbw_gbytes_per_s, busbw_gbytes_per_s, ...)."""
    scenario = scenario if scenario is not None else Scenario()
    return json.loads(_megasim._collective_json(scenario, op, str(bytes), algo, group, int(gpus)))


def topology(scenario=None):
    """Builds the scenario's cluster and returns the `megasim topo --json` summary as a dict."""
    scenario = scenario if scenario is not None else Scenario()
    return json.loads(_megasim._topology_json(scenario))


def run(scenario=None):
    """Simulates one training iteration of the scenario rank by rank and returns the report as a
    dict with the keys of `megasim run --json` (iteration_time_s, tokens_per_s, mfu, hfu,
    flop_convention, breakdown, memory, plan, heat_map, critical_path)."""
    scenario = scenario if scenario is not None else Scenario()
    return json.loads(_megasim._run_json(scenario))


def plan(scenario=None):
    """Resolves and checks the scenario's parallel plan; returns `megasim plan --json` as a dict."""
    scenario = scenario if scenario is not None else Scenario()
    return json.loads(_megasim._plan_json(scenario))


def campaign(scenario=None, days=30, seeds=10, sweep=False, intervals=()):
    """Simulates a whole training run with failures, recovery and checkpoints, once per seed, and
    returns `megasim campaign --json` as a dict (ettr, ettr_p5, ettr_p95, lost_time_s, failures,
    checkpoint, timeline, ...; with sweep=True also sweep and best_interval_s). `intervals` replaces
    the sweep's default grid around Daly's optimum (seconds)."""
    scenario = scenario if scenario is not None else Scenario()
    return json.loads(_megasim._campaign_json(scenario, float(days), int(seeds), bool(sweep),
                                              [float(t) for t in intervals]))

