"""megasim: simulate large-scale LLM training clusters.

Thin Python sugar over the C++ core (_megasim). Scenarios come from TOML (`load`, `Scenario.from_toml`)
or a dict (`Scenario.from_dict`) and are changed key by key (`Scenario.set`); studies return the
command line's reports (`run` a RunReport, `campaign` a CampaignReport, `whatif` a WhatIfReport,
`sweep` a pandas DataFrame of `megasim sweep --csv`, its simulations on any concurrent.futures
executor, RayExecutor for a Ray cluster; the others dicts), with the same numbers. Errors
in inputs raise ValueError with the message the command line prints. Studies release the GIL, so
threads can run them side by side. Plots are in megasim.plot (matplotlib).
"""
import json

from ._megasim import Scenario, __commit__, __version__  # noqa: F401
from . import _inputs, _megasim, campaigns
from .reports import CampaignReport, JsonReport, RunReport, WhatIfReport, reports_frame  # noqa: F401
from .sweeps import sweep  # noqa: F401
from .ray_executor import RayExecutor  # noqa: F401 (imports Ray only when one is made)

# Real backends run one process per rank under MPI (cpu) or per GPU (cuda): the command line
# launches them, not a Python call.
_REAL_BACKENDS = ("cpu", "cuda")


def keys():
    """The table of every scenario key as data (`megasim keys --json`): a list of dicts with key
    ("section.name"), section, name, type (integer, number, boolean or string), default (of that
    type), unit ("" when dimensionless), description and choices (the valid values of a string key
    as the table words them; "" for other keys), in the table's order. pandas.DataFrame(keys())
    gives it as a table; print(keys_text()) as `megasim keys` prints it."""
    return json.loads(_megasim._keys_json())["keys"]


def available_backends():
    """The backends this megasim was built with, as `megasim backends` lists them built: "sim", "cpu"
    and, when the CUDA backend was built, "cuda". Only "sim" runs from Python (megasim.run); the
    others run one process per rank from the command line."""
    return list(_megasim._available_backends())


def keys_text():
    """The key table as `megasim keys` prints it."""
    return _megasim._keys_text()


def load(path):
    """Loads a scenario TOML file over the defaults (a relative [calibration] file is found next to it)."""
    return _megasim.load(_inputs.path("scenario", path))


_scenario = _inputs.scenario


def collective(scenario=None, op="all_reduce", bytes="1GiB", algo="ring", group="", gpus=0):
    """Simulates one collective (or every tp/dp/pp group of the plan when `group` is set) and
    returns the report as a dict with the CLI's JSON keys (op, bytes, gpus, algo, routing, time_s,
    algbw_gbytes_per_s, busbw_gbytes_per_s, ...)."""
    return json.loads(_megasim._collective_json(_scenario(scenario), _inputs.text("--op", op), str(bytes),
                                                _inputs.text("--algo", algo), _inputs.text("--group", group),
                                                _inputs.integer("--gpus", gpus)))


def topology(scenario=None):
    """Builds the scenario's cluster and returns the `megasim topo --json` summary as a dict."""
    return json.loads(_megasim._topology_json(_scenario(scenario)))


def run(scenario=None, backend="sim", samples=1):
    """Simulates one training iteration of the scenario rank by rank; returns a RunReport equal to
    `megasim run --json` (iteration_time_s, tokens_per_s, mfu, hfu, flop_convention,
    mfu_full_attention (MegaScale's convention: full attention even with a sliding window),
    breakdown, memory, plan, heat_map, critical_path, ...) with the trace (`.trace`) and `.save(dir)`.

    samples=N (as `megasim run --samples N`) simulates N - 1 more iterations, each with its own seed
    (ECMP hashing, straggler, jitter and GC draws), and adds report["samples"]: the seeds, each
    sample's iteration_time_s and mfu, and their median, p5 and p95 (megasim.plot.samples draws it).

    Only backend="sim" runs in Python; "cpu" and "cuda" need one process per rank, which the
    command line launches (`megasim run SCENARIO --backend cpu|cuda`)."""
    scenario = _scenario(scenario)
    if backend in _REAL_BACKENDS:
        raise ValueError(f"--backend = {backend} is invalid: expected sim from Python; the {backend} backend runs "
                         f"one process per rank: use the command line, megasim run SCENARIO --backend {backend}")
    if backend != "sim":
        raise ValueError(f"--backend = {backend} is invalid: expected sim (the simulator), cpu (Eigen + MPI) or "
                         "cuda (CUDA + NCCL)")
    return RunReport(_megasim._run(scenario, _inputs.integer("--samples", samples)))


def explain(a, b):
    """Why two runs differ in MFU (as `megasim explain A B --json`): both scenarios simulated, and a
    dict with a and b (name, gpus, iteration_time_s, mfu, breakdown), mfu_change, and steps: the
    waterfall over compute, tp_exposed, pp_exposed, dp_exposed, bubble and waiting, each with its
    share of both iterations and its MFU change (they sum to mfu_change; megasim.plot.explain draws
    it)."""
    return json.loads(_megasim._explain_json(_scenario(a), _scenario(b)))


def calibrate_measured(csv, scenario=None, fit=None, predict=None, leave_one_out=True):
    """Fits cost-model parameters to measured runs (as `megasim calibrate --measured CSV [SCENARIO]
    --json`; the CSV format and the parameters: docs/calibration.md). `scenario`: the scenario of
    rows without a scenario column (a megasim.Scenario, a path, or None for the defaults); `fit`: a
    list of parameter names (None: the default set); `predict`: a CSV of more runs predicted with the
    fit and not fitted. Returns the report as a dict: parameters (prior, fitted, status), rows
    (measured, before, after, errors, leave_one_out), the mean absolute errors. Bad input raises
    ValueError with the command line's message."""
    if scenario is not None and not isinstance(scenario, _megasim.Scenario):
        scenario = load(scenario)
    if fit is None:
        fit = []
    elif isinstance(fit, str):
        fit = fit.split(",")
    elif not hasattr(fit, "__iter__"):
        raise _inputs._refuse("--fit", fit, "a list of parameter names")
    fit = [_inputs.text("--fit", f) for f in fit]
    predict_csv = "" if predict is None else _inputs.input_file("--predict", predict, "a readable CSV file")
    return json.loads(_megasim._calibrate_measured_json(_inputs.input_file("--measured", csv, "a readable CSV file"),
                                                        _scenario(scenario), fit, predict_csv,
                                                        bool(leave_one_out)))


def plan(scenario=None):
    """Resolves and checks the scenario's parallel plan; returns `megasim plan --json` as a dict."""
    return json.loads(_megasim._plan_json(_scenario(scenario)))


def campaign(scenario=None, days=30, seeds=10, sweep=False, intervals=(), executor=None, seeds_per_task=None):
    """Simulates a whole training run with failures, recovery and checkpoints, once per seed, and
    returns a CampaignReport equal to `megasim campaign --json` (ettr, ettr_p5, ettr_p95,
    lost_time_s, failures, checkpoint, timeline, ...; with sweep=True also sweep and
    best_interval_s, as --sweep-checkpoint-interval). `intervals` replaces the sweep's default grid
    around Daly's optimum (seconds, as --intervals).

    executor: None runs the study in this process (its iteration simulations on this machine's
    cores); any concurrent.futures.Executor (a process pool, `distributed.Client(...).get_executor()`,
    megasim.RayExecutor()) runs its phases as tasks there (megasim.campaigns): the ranges of seeds
    (`seeds_per_task` each; default about four per worker) and each iteration simulation, with the
    same report to the byte."""
    options = (_inputs.number("--days", days), _inputs.integer("--seeds", seeds), bool(sweep),
               _inputs.numbers_list("--intervals", intervals))
    if executor is None:
        if seeds_per_task is not None:
            raise ValueError(f"seeds_per_task = {seeds_per_task!r} is invalid without an executor (the study "
                             "runs in this process); pass an executor, or leave it None")
        return CampaignReport(json.loads(_megasim._campaign_json(_scenario(scenario), *options)))
    if not callable(getattr(executor, "submit", None)):
        raise ValueError(f"executor = {executor!r} is invalid: expected a concurrent.futures.Executor (its submit "
                         "runs the campaign's tasks), or None to run the study in this process")
    if seeds_per_task is not None:
        seeds_per_task = _inputs.integer("seeds_per_task", seeds_per_task)
        if seeds_per_task < 1:
            raise ValueError(f"seeds_per_task = {seeds_per_task} is invalid: expected an integer >= 1")
    return CampaignReport(json.loads(campaigns.campaign_json(_scenario(scenario), options, executor, seeds_per_task)))


def whatif(trace, slowest=1):
    """The what-if analysis of a recorded iteration: `trace` is a trace.bin or trace.json path, or
    the folder holding them (as `megasim whatif TRACE --slowest K --json`; written by `megasim run
    --out DIR --max-trace-ranks 0`, RunReport.save(dir, max_ranks=0) or `megasim validate --out
    DIR`) or a RunReport (its in-memory trace, every rank). Returns a WhatIfReport."""
    slowest = _inputs.integer("--slowest", slowest)
    if isinstance(trace, RunReport):
        return WhatIfReport(json.loads(trace._run.whatif_json(slowest)))
    return WhatIfReport(json.loads(_megasim._whatif_json(_inputs.path("trace", trace), slowest)))
