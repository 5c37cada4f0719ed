"""megasim.sweep and megasim.campaign on a local Ray cluster through megasim.RayExecutor: the same frame and
executor's, and the executor's futures as concurrent.futures promises (values, errors, shutdown)."""
import pytest

import megasim
from conftest import SMALL
from test_sweep import MAX_MB, assert_same

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of two CPUs (two tasks at a time), stopped after this module."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def frame():
    """The sweep on the default executor (a process pool), as in test_sweep.py."""
    return megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB)


def test_ray_cluster_gives_the_same_frame(ray_cluster, frame):
    with megasim.RayExecutor() as executor:
        on_ray = megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, executor=executor)
    assert_same(on_ray, frame)


def test_ray_executor_futures(ray_cluster):
    executor = megasim.RayExecutor()
    assert executor.submit(pow, 2, 10).result() == 1024
    assert list(executor.map(divmod, [7, 9], [2, 4])) == [(3, 1), (2, 1)]
    # A task's error is raised as its own class (Ray's RayTaskError subclasses it), as megasim.sweep
    # raises the first failed task's.
    with pytest.raises(ValueError, match="invalid literal"):
        executor.submit(int, "x").result()
    executor.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(pow, 2, 10)


def test_ray_cluster_gives_the_same_campaign(ray_cluster):
    """megasim.campaign's phases as Ray tasks (megasim.campaigns): the single process's report."""
    scenario = megasim.load(SMALL)
    scenario.set("failures.rate_scale", 300)
    local = megasim.campaign(scenario, days=2, seeds=5, sweep=True)
    assert local["damaged_iterations"]  # the tasks include damaged-state simulations
    with megasim.RayExecutor() as executor:
        on_ray = megasim.campaign(scenario, days=2, seeds=5, sweep=True, executor=executor, seeds_per_task=2)
    assert on_ray.to_dict() == local.to_dict()
