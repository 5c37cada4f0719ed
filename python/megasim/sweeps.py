"""megasim.sweep: `megasim sweep` from Python, its simulations spread by a concurrent.futures executor.

The C++ core enumerates the candidates (scenarios/studies/sweep/sweep_study.h: enumerate_sweep), decides which
screened plans to simulate in full (SweepConfirmation) and ranks the rows (make_sweep_report); only
the simulations run on the executor, one task per plan: `screen_candidate(pickled_scenario,
candidate)` for every accepted plan, then `evaluate_candidate(...)` for those the confirmation hands
out. Candidates and rows are plain dicts, so any executor that pickles its tasks (a process pool,
dask.distributed's `Client.get_executor()`, megasim.RayExecutor on a Ray cluster) can run them. The frame is read from the
report's CSV, the bytes `megasim sweep --csv` writes.
"""
import concurrent.futures
import io
import multiprocessing
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from . import _inputs, _megasim, _tasks

_ACCEPTED = "simulated"  # SweepStatus::kSimulated: accepted, to simulate


def evaluate_candidate(pickled_scenario, candidate):
    """A task an executor runs: the row (a dict) of one candidate of
    `_megasim._sweep_candidates(scenario, ...)` simulated in full, `pickled_scenario` being
    `pickle.dumps(scenario)`. A pure function of its arguments (evaluate_sweep_candidate), so where it
    runs never matters."""
    return _megasim._evaluate_sweep_candidate(pickle.loads(pickled_scenario), candidate)


def screen_candidate(pickled_scenario, candidate):
    """The other task an executor runs: the row of one candidate screened, replica 0 standing for every
    replica (screen_sweep_candidate); a pure function of its arguments too."""
    return _megasim._screen_sweep_candidate(pickle.loads(pickled_scenario), candidate)


def vary_specs(vary=(), gpus=()):
    """The `--vary` specs of the CLI for `gpus` (first, as `--gpus N ...`) and `vary`: strings
    "section.key=v1,v2" or "section.key=a..b[:s]" as they are, or a dict {key: values} where values is
    a list (joined with commas; booleans as true/false) or one such string."""
    specs = []
    if gpus:
        specs.append("cluster.gpus=" + ",".join(str(g) for g in _inputs.integers("--gpus", gpus)))
    if isinstance(vary, str):
        vary = [vary]
    if isinstance(vary, dict):
        vary = [f"{key}={_values_text(values)}" for key, values in vary.items()]
    return specs + [str(spec) for spec in vary]


def _values_text(values):
    if isinstance(values, str):
        return values
    return ",".join(_value_text(v) for v in values)


def _value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _default_executor(tasks):
    """A process pool of one worker per available core (at most one per task). Workers start from a
    forkserver: forking the caller itself is unsafe once it runs threads (numpy's BLAS pool after
    importing pandas, a notebook's, dask's; Python 3.12 warns of it and 3.14 defaults to forkserver),
    and spawning a fresh interpreter per worker costs more on every sweep (the forkserver starts
    once per process). Measured on the 24-candidate test sweep, 2 cores: fork 0.03-0.04 s,
    forkserver 0.06-0.11 s, spawn 0.13-0.14 s a sweep; the difference is noise beside a real sweep.
    As with any forkserver or spawn pool, a script must call sweep under `if __name__ == "__main__":`."""
    cores = _tasks.cores()
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=max(1, min(cores, tasks)), mp_context=context)


def _map_rows(executor, task, pickled, candidates, indices):
    """{index: row} for `task(pickled, candidates[index])` run on the executor for every index, the
    costliest first. As in run_sweep_study, a failure stops the sweep (the tasks not yet started are
    cancelled) and the first failure by key is raised."""
    indices = list(indices)
    order = sorted(range(len(indices)), key=lambda k: -candidates[indices[k]]["estimated_cost"])
    rows = _tasks.map_tasks(executor, task, [(pickled, candidates[i]) for i in indices], order)
    return dict(zip(indices, rows))


def _confirm(executor, pickled, rows, confirm_top, in_flight):
    """The confirmation of screened rows (scenarios::SweepConfirmation): full simulations handed out in
    the order of the screens, at most `in_flight` at a time, until no screened row can reach its
    point's top; the rows of the sequential rule, so the same whatever the executor."""
    confirmation = _megasim._SweepConfirmation(rows, confirm_top)
    running = {}  # future -> row index
    try:
        while True:
            while len(running) < in_flight:
                i = confirmation.next()
                if i is None:
                    break
                running[executor.submit(evaluate_candidate, pickled, rows[i]["candidate"])] = i
            if not running:
                return confirmation.rows()
            done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            failed = sorted((running[f], f) for f in done if f.exception() is not None)
            if failed:
                failed[0][1].result()  # raises the first failure by key among those done
            for f in done:
                confirmation.record(running.pop(f), f.result())
    except BaseException:
        for f in running:
            f.cancel()
        raise


def _evaluate_all(scenario, candidates, executor, confirm_top):
    """One row per candidate, in the candidates' order, as run_sweep_study gives them: the accepted ones
    screened on `executor` and then confirmed (every one simulated in full when confirm_top is 0), the
    rejected ones as they are."""
    accepted = [i for i, c in enumerate(candidates) if c["status"] == _ACCEPTED]
    rows = [None if c["status"] == _ACCEPTED else _megasim._evaluate_sweep_candidate(scenario, c) for c in candidates]
    if not accepted:
        return rows
    owned = executor is None
    if owned:
        executor = _default_executor(len(accepted))
    pickled = pickle.dumps(scenario)
    try:
        task = evaluate_candidate if confirm_top == 0 else screen_candidate
        for i, row in _map_rows(executor, task, pickled, candidates, accepted).items():
            rows[i] = row
        if confirm_top > 0:
            rows = _confirm(executor, pickled, rows, confirm_top, _tasks.workers(executor))
    except BrokenProcessPool as e:
        if owned:
            raise BrokenProcessPool(f"{e} (the default pool's workers start from a forkserver and import the "
                                    "main module: call megasim.sweep under `if __name__ == \"__main__\":`, or "
                                    "pass an executor)") from e
        raise
    finally:
        if owned:
            executor.shutdown(wait=True, cancel_futures=True)
    return rows


def read_csv(path_or_buffer):
    """A sweep CSV (`megasim sweep --csv FILE`) as the DataFrame megasim.sweep returns for the same
    sweep: every number read back to the double the CLI wrote (its shortest round-trip form)."""
    import pandas as pd

    if isinstance(path_or_buffer, (str, os.PathLike)):
        path_or_buffer = _inputs.input_file("csv", path_or_buffer, "a sweep CSV (megasim sweep --csv FILE)")
    # pandas 3 parses floats exactly by default and deprecates float_precision; older versions need it.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(path_or_buffer, **exact)


def sweep(scenario, *, vary=(), gpus=(), max_micro_batch_size=0, executor=None, top=None, confirm_top=10,
          full=False):
    """Every candidate plan of `megasim sweep SCENARIO [--gpus N ...] [--vary SPEC ...]
    [--max-micro-batch M] [--confirm-top K] [--full]` as a pandas DataFrame with the columns and rows
    of its `--csv` (same order, same values): the plans simulated in full ranked by tokens/s (ties by
    key), with their rank, then the plans only screened (status "screened", their one-replica figures,
    an upper bound), then the rejected ones with their status (out_of_memory, invalid) and reason.

    vary: `--vary` specs ("plan.micro_batch_size=1,2,4", "cluster.gpus=64..256") or a dict
    {key: [values]}; gpus: shorthand for varying cluster.gpus. executor: any
    concurrent.futures.Executor to run the simulations on (one task per plan screened or simulated),
    e.g. `distributed.Client(...).get_executor()`; default a process pool on this machine's cores.
    confirm_top: every plan that could be among the `confirm_top` fastest of its point is simulated in
    full (scenarios/studies/sweep/sweep_study.h, "Screen and confirmation"); full=True simulates every plan in full.
    top: keep only the `top` fastest plans simulated in full (and every other row), as `--top` does
    in `--json`; like `--top`, it raises confirm_top to itself. A bad key or value raises ValueError
    with the CLI's message."""
    import pandas as pd  # noqa: F401  (read_csv needs it; fail early without it)

    scenario = _inputs.scenario(scenario)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise ValueError(f"executor = {executor!r} is invalid: expected a concurrent.futures.Executor (its submit "
                         "runs the simulations), or None for a process pool on this machine's cores")
    specs = vary_specs(vary, gpus)
    max_micro_batch_size = _inputs.integer("--max-micro-batch", max_micro_batch_size)
    confirm_top = _inputs.integer("--confirm-top", confirm_top)
    top = None if top is None else _inputs.integer("--top", top)
    if not full and confirm_top < 1:
        raise ValueError(f"confirm_top: {confirm_top}: a number >= 1 (full=True simulates every plan in full)")
    confirm_top = 0 if full else max(confirm_top, top or 0)
    candidates = _megasim._sweep_candidates(scenario, specs, max_micro_batch_size)
    rows = _evaluate_all(scenario, candidates, executor, confirm_top)
    report = _megasim._sweep_report(scenario, specs, max_micro_batch_size, rows, confirm_top)
    frame = read_csv(io.StringIO(report.csv()))
    if top is not None and top > 0:
        frame = frame[frame["rank"].isna() | (frame["rank"] <= top)].reset_index(drop=True)
    return frame
