"""megasim.campaign with an executor (megasim.campaigns: the study's phases as tasks) gives the report
of the single process to the byte, whatever the executor and the split of the seeds; and the phases
refuse what does not fit together. The scenario: campaign_small at 300x the public failure rates with
drift, so that 3 days of 7 seeds reach 5 damaged fabric states and 7 drift knots (the simulations
the phases hand out), with the checkpoint sweep."""
import concurrent.futures
import json
import multiprocessing
import pickle

import pytest

import megasim
from megasim import _megasim, campaigns
from conftest import SMALL

OPTIONS = (3.0, 7, True, [])  # days, seeds, sweep, intervals


@pytest.fixture(scope="module")
def scenario():
    s = megasim.load(SMALL)
    s.set("failures.rate_scale", 300)
    s.set("stragglers.drift_per_hour", 0.01)
    return s


@pytest.fixture(scope="module")
def local_text(scenario):
    return _megasim._campaign_json(scenario, *OPTIONS)


def test_the_scenario_reaches_damaged_states_and_drift_knots(local_text):
    report = json.loads(local_text)
    assert len(report["damaged_iterations"]) >= 2
    assert len(report["drift_iterations"]) >= 3
    assert len(report["sweep"]) >= 5 and len(report["ettr_per_seed"]) == 7


@pytest.mark.parametrize("seeds_per_task", [1, 3, 7, None])
def test_a_thread_pool_gives_the_same_report_to_the_byte(scenario, local_text, seeds_per_task):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as executor:
        text = campaigns.campaign_json(scenario, OPTIONS, executor, seeds_per_task)
    assert text == local_text


def test_a_process_pool_gives_the_same_report(scenario, local_text):
    context = multiprocessing.get_context("forkserver")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=context) as executor:
        report = megasim.campaign(scenario, days=3, seeds=7, sweep=True, executor=executor, seeds_per_task=2)
    assert report.to_dict() == json.loads(local_text)


def test_a_dask_distributed_cluster_gives_the_same_report(scenario, local_text):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        report = megasim.campaign(scenario, days=3, seeds=7, sweep=True, executor=client.get_executor())
    assert report.to_dict() == json.loads(local_text)


def test_seed_ranges_cover_the_seeds_in_order():
    assert campaigns.seed_ranges(7, 2, 3) == [(0, 3), (3, 3), (6, 1)]
    assert campaigns.seed_ranges(7, 1) == [(0, 2), (2, 2), (4, 2), (6, 1)]  # about four per worker
    assert campaigns.seed_ranges(100000, 1) == [(f, 250) for f in range(0, 100000, 250)]


def test_a_knot_missing_from_the_times_is_simulated_by_the_seeds_and_merged(scenario, local_text):
    pickled = pickle.dumps(scenario)
    reach = campaigns.reach_states(pickled, OPTIONS, 0, 7)
    simulations = _megasim._campaign_simulations(scenario, *OPTIONS, [reach])
    times = [campaigns.simulate_state(pickled, s) for s in simulations]
    assert times[0]["failed"] == [0, 0, 0, 0] and times[0]["drift_knot"] == 0  # healthy first
    last_knot = max(range(len(times)), key=lambda i: times[i]["drift_knot"])
    fewer = times[:last_knot] + times[last_knot + 1:]
    seeds = campaigns.run_seeds(pickled, OPTIONS, fewer, 0, 7)
    assert seeds["extra"] == [times[last_knot]]
    assert _megasim._campaign_merge_json(scenario, *OPTIONS, fewer, [seeds]) == local_text


def test_the_merge_refuses_ranges_that_do_not_cover_the_seeds(scenario):
    pickled = pickle.dumps(scenario)
    simulations = _megasim._campaign_simulations(scenario, *OPTIONS, [campaigns.reach_states(pickled, OPTIONS, 0, 7)])
    times = [campaigns.simulate_state(pickled, s) for s in simulations]
    a = campaigns.run_seeds(pickled, OPTIONS, times, 0, 3)
    b = campaigns.run_seeds(pickled, OPTIONS, times, 3, 4)
    assert _megasim._campaign_merge_json(scenario, *OPTIONS, times, [a, b])  # the whole is accepted
    for ranges, message in (([a], "all 7 seeds"), ([b, a], "the next range starts at seed 0"),
                            ([a, a, b], "the next range starts at seed 3")):
        with pytest.raises(ValueError, match=message):
            _megasim._campaign_merge_json(scenario, *OPTIONS, times, ranges)
    with pytest.raises(ValueError, match="a range of seeds within 0 .. 6"):
        campaigns.run_seeds(pickled, OPTIONS, times, 5, 3)
    with pytest.raises(ValueError, match="iteration times > 0 s"):
        campaigns.run_seeds(pickled, OPTIONS, [dict(times[0], iteration_time_s=-1.0)], 0, 1)
    with pytest.raises(ValueError, match="simulation.drift_knot"):
        campaigns.simulate_state(pickled, {"failed": [0, 0, 0, 0], "drift_knot": 99})
    with pytest.raises(ValueError, match="simulation.failed"):
        campaigns.simulate_state(pickled, {"failed": [9, 0, 0, 0], "drift_knot": 0})


def test_bad_executor_arguments_are_value_errors(scenario):
    with pytest.raises(ValueError, match="seeds_per_task"):
        megasim.campaign(scenario, days=1, seeds=2, seeds_per_task=1)
    with pytest.raises(ValueError, match="executor"):
        megasim.campaign(scenario, days=1, seeds=2, executor="local")
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
        with pytest.raises(ValueError, match="seeds_per_task = 0"):
            megasim.campaign(scenario, days=1, seeds=2, executor=executor, seeds_per_task=0)
        # The options are checked before any task starts, with the command line's messages.
        with pytest.raises(ValueError, match="--seeds"):
            megasim.campaign(scenario, days=1, seeds=10**9, executor=executor)
        with pytest.raises(ValueError, match="--days"):
            megasim.campaign(scenario, days=0, seeds=2, executor=executor)
