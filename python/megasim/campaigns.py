"""megasim.campaign on an executor: the campaign study's phases
(scenarios/studies/campaign/campaign_phases.h) as tasks on any concurrent.futures executor (a
process pool, dask.distributed's `Client.get_executor()`, megasim.RayExecutor on a Ray cluster).

1. the first pass over ranges of seeds, one task per range: the damaged states the campaigns reach;
2. the iteration simulations those need (one call of the C++ core), one task each: the study's cost;
3. the real pass over the same ranges, one task per range, with the simulated iteration times;
4. the report merged from the ranges in seed order (the C++ core), equal to the single process's
   `megasim campaign --json` to the byte, whatever the executor and the split of the seeds.
Every task is a pure function of plain, picklable arguments (the scenario pickled, dicts, lists and
numbers), so where it runs never matters.
"""
import pickle

from . import _megasim, _tasks

# A range of seeds per task at most: a campaign seed takes milliseconds, so a task of a few hundred
# keeps the executor's per-task cost small beside its work.
MAX_SEEDS_PER_TASK = 250


def reach_states(pickled_scenario, options, first, count):
    """Task 1: what the first pass of seeds [first, first + count) reaches (a dict)."""
    return _megasim._campaign_reach(pickle.loads(pickled_scenario), *options, first, count)


def simulate_state(pickled_scenario, simulation):
    """Task 2: one iteration simulation (a dict of campaign_simulations) with its time."""
    time_s = _megasim._campaign_simulate(pickle.loads(pickled_scenario), simulation)
    return dict(simulation, iteration_time_s=time_s)


def run_seeds(pickled_scenario, options, times, first, count):
    """Task 3: the outcomes of seeds [first, first + count) with the iteration times given."""
    return _megasim._campaign_seeds(pickle.loads(pickled_scenario), *options, times, first, count)


def seed_ranges(seeds, workers, seeds_per_task=None):
    """[(first, count)] covering seeds 0 .. seeds - 1 in order: `seeds_per_task` each, or by default
    about four ranges per worker (so that uneven ranges even out), at most MAX_SEEDS_PER_TASK each."""
    if seeds_per_task is None:
        seeds_per_task = min(MAX_SEEDS_PER_TASK, max(1, -(-seeds // (4 * workers))))
    return [(first, min(seeds_per_task, seeds - first)) for first in range(0, seeds, seeds_per_task)]


def campaign_json(scenario, options, executor, seeds_per_task=None):
    """The report's JSON text of the campaign (`options`: days, seeds, sweep, intervals as
    megasim.campaign checked them) with its tasks on `executor`."""
    # Checks the scenario and options here, before any task starts (a bad key fails at once, and
    # --seeds is bounded before the ranges are made).
    _megasim._campaign_simulations(scenario, *options, [])
    seeds = options[1]
    ranges = seed_ranges(seeds, _tasks.workers(executor), seeds_per_task)
    pickled = pickle.dumps(scenario)
    reaches = _tasks.map_tasks(executor, reach_states, [(pickled, options, f, n) for f, n in ranges])
    simulations = _megasim._campaign_simulations(scenario, *options, reaches)
    times = _tasks.map_tasks(executor, simulate_state, [(pickled, s) for s in simulations])
    outcomes = _tasks.map_tasks(executor, run_seeds, [(pickled, options, times, f, n) for f, n in ranges])
    return _megasim._campaign_merge_json(scenario, *options, times, outcomes)
