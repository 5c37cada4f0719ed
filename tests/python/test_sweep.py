"""megasim.sweep against `megasim sweep`: the same table (columns, rows, order, values) for the same
scenario and options, whatever executor runs the simulations; sorted and complete; errors as the CLI's."""
import concurrent.futures
import itertools

import pytest

import megasim
import megasim.plot
from conftest import SMALL, assert_png, cli, cli_error, cli_json, plot_cli
from megasim.sweeps import read_csv

pd = pytest.importorskip("pandas")

# Micro-batches 1, 2, 4 of the 64-GPU, 4-layer scenario: a few dozen candidates, each simulated in
# milliseconds.
MAX_MB = 4
# Crossed with the plans: GPU counts, and a model whose larger plans do not fit in HBM (out_of_memory).
VARY_GPUS = [32, 64]
VARY = {"model.hidden_size": [1024, 16384]}
VARY_CLI = ["--gpus", "32", "64", "--vary", "model.hidden_size=1024,16384"]


def cli_frame(tmp_path, *args):
    path = tmp_path / "cli_sweep.csv"
    cli("sweep", SMALL, "--max-micro-batch", MAX_MB, "--csv", path, *args)
    return read_csv(path)


def assert_same(a, b):
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.fixture(scope="module")
def frame():
    """The sweep on the default executor (a process pool)."""
    return megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB)


@pytest.fixture(scope="module")
def varied():
    return megasim.sweep(megasim.load(SMALL), gpus=VARY_GPUS, vary=VARY, max_micro_batch_size=MAX_MB)


def test_same_table_as_cli(frame, tmp_path):
    assert_same(frame, cli_frame(tmp_path))


def test_same_table_as_cli_with_vary(varied, tmp_path):
    assert_same(varied, cli_frame(tmp_path, *VARY_CLI))
    assert list(varied.columns[1:3]) == ["cluster.gpus", "model.hidden_size"]  # --gpus first, as in the CLI
    assert set(varied["status"]) == {"simulated", "screened", "out_of_memory", "invalid"}


def test_vary_as_strings_and_ranges(tmp_path):
    specs = ["cluster.gpus=32..64", "plan.sequence_parallel=true,false"]
    frame = megasim.sweep(megasim.load(SMALL), vary=specs, max_micro_batch_size=MAX_MB,
                          executor=concurrent.futures.ThreadPoolExecutor(2))
    assert_same(frame, cli_frame(tmp_path, "--vary", specs[0], "--vary", specs[1]))
    as_dict = megasim.sweep(megasim.load(SMALL), vary={"cluster.gpus": "32..64", "plan.sequence_parallel": [True, False]},
                            max_micro_batch_size=MAX_MB, executor=concurrent.futures.ThreadPoolExecutor(2))
    assert_same(as_dict, frame)


def plan_space(scenario):
    """The candidates sweep_study.h promises: TP dividing the server, PP dividing the layers, layers
    per virtual stage 0 or a proper divisor of the layers per stage (PP >= 2), micro-batches powers of
    two up to MAX_MB."""
    def divisors(n):
        return [d for d in range(1, n + 1) if n % d == 0]

    layers = scenario.get("model.num_layers")
    space = set()
    for tp, pp in itertools.product(divisors(scenario.get("cluster.gpus_per_server")), divisors(layers)):
        chunks = [0] + ([d for d in divisors(layers // pp) if d < layers // pp] if pp >= 2 else [])
        for lpvs, mb in itertools.product(chunks, [1, 2, 4]):
            space.add((tp, pp, lpvs, mb))
    return space


def test_sorted_and_complete(frame):
    simulated = frame[frame["status"] == "simulated"]
    screened = frame[frame["status"] == "screened"]
    rejected = frame[~frame["status"].isin(["simulated", "screened"])]
    n, k = len(simulated), len(screened)
    assert n >= 10 and k > 0 and len(rejected) > 0
    # Rows simulated in full first, ranked 1..n, by tokens/s descending; then the screened ones by
    # their screens, below every confirmed row's, with a reason and no rank; then the rejected ones.
    assert list(simulated.index) == list(range(n))
    assert list(simulated["rank"]) == list(range(1, n + 1))
    assert simulated["tokens_per_s"].is_monotonic_decreasing
    assert list(screened.index) == list(range(n, n + k))
    assert screened["tokens_per_s"].is_monotonic_decreasing
    assert (screened["screen_tokens_per_s"] == screened["tokens_per_s"]).all()
    assert (screened["screen_tokens_per_s"] < simulated["tokens_per_s"].iloc[9]).all()
    assert screened["rank"].isna().all() and (screened["reason"].str.startswith("screened: at most")).all()
    assert (simulated["screen_tokens_per_s"] >= simulated["tokens_per_s"]).all()
    assert rejected["rank"].isna().all() and rejected["tokens_per_s"].isna().all()
    assert (rejected["reason"].str.len() > 0).all()
    # Every candidate once, and the counts the CLI reports.
    keys = list(frame[["tp", "pp", "layers_per_virtual_stage", "micro_batch_size"]].itertuples(index=False, name=None))
    assert len(set(keys)) == len(keys)
    assert set(keys) == plan_space(megasim.load(SMALL))
    counts = cli_json("sweep", SMALL, "--max-micro-batch", MAX_MB)["counts"]
    assert counts == {"candidates": len(frame), "simulated": n, "screened": k,
                      "out_of_memory": int((frame["status"] == "out_of_memory").sum()),
                      "invalid": int((frame["status"] == "invalid").sum()), "bound_violations": 0}


def test_full_sweep_as_cli_and_its_top_equals_the_confirmed_top(frame, tmp_path):
    full = megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, full=True,
                         executor=concurrent.futures.ThreadPoolExecutor(2))
    assert_same(full, cli_frame(tmp_path, "--full"))
    assert set(full["status"]) == {"simulated", "invalid"}  # nothing screened; at 64 GPUs every plan fits
    assert (full["status"] == "simulated").sum() == frame["status"].isin(["simulated", "screened"]).sum()
    # The confirmed top 10 are the full sweep's top 10, figure for figure (screen_tokens_per_s aside).
    columns = [c for c in frame.columns if c != "screen_tokens_per_s"]
    assert_same(frame[columns].iloc[:10], full[columns].iloc[:10])
    with pytest.raises(ValueError, match="confirm_top"):
        megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, confirm_top=0)


def test_top_keeps_the_fastest_and_every_other_row(frame):
    top = megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, top=3,
                        executor=concurrent.futures.ThreadPoolExecutor(2))
    expected = pd.concat([frame.iloc[:3], frame[frame["status"] != "simulated"]]).reset_index(drop=True)
    assert_same(top, expected)


@pytest.mark.parametrize("vary", [
    "plan.no_such_key=1,2",
    "plan.micro_batch_size=1,x",
    "plan.sequence_parallel=1..4",
    {"cluster.gpus": ["many"]},
])
def test_bad_vary_is_value_error_as_cli(vary):
    spec = vary if isinstance(vary, str) else "cluster.gpus=many"
    key = spec.split("=")[0]
    message = cli_error("sweep", SMALL, "--vary", spec)
    assert key in message
    with pytest.raises(ValueError) as error:
        megasim.sweep(megasim.load(SMALL), vary=vary)
    assert str(error.value) == message


class FailingExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each task's function, then fails it as a lost worker would."""

    def submit(self, fn, *args):
        def task():
            fn(*args)
            raise RuntimeError("worker lost")

        return super().submit(task)


def test_a_failed_task_fails_the_sweep():
    with pytest.raises(RuntimeError, match="worker lost"):
        megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, executor=FailingExecutor(1))


def test_dask_distributed_cluster_gives_the_same_frame(frame):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        on_dask = megasim.sweep(megasim.load(SMALL), max_micro_batch_size=MAX_MB, executor=client.get_executor())
    assert_same(on_dask, frame)


def test_sweep_frame_plots(varied, tmp_path):
    fig = megasim.plot.sweep(varied)  # defaults: tokens_per_s against memory_gb, coloured by tp
    drawn = varied[varied["status"].isin(["simulated", "screened"])]
    screened = drawn[drawn["status"] == "screened"]
    # Per TP degree of the drawn plans a filled set (simulated in full, possibly empty) and, where it
    # has screened plans, a hollow one; plus the ring around the best.
    points = [len(c.get_offsets()) for c in fig.axes[0].collections]
    assert len(points) == drawn["tp"].nunique() + screened["tp"].nunique() + 1
    assert sum(points) == len(drawn) + 1
    assert "screened" in fig.axes[0].get_title()
    fig.savefig(tmp_path / "sweep.png")
    assert_png(tmp_path / "sweep.png")
    # The CLI's CSV of the same sweep, through python -m megasim.plot with its defaults.
    cli_frame(tmp_path, *VARY_CLI)
    out = plot_cli(tmp_path / "cli_sweep.csv", "--out", tmp_path / "sweep_cli.png")
    assert out.returncode == 0, out.stderr
    assert_png(tmp_path / "sweep_cli.png")


def test_moe_sweep_searches_expert_parallelism_as_the_cli(tmp_path):
    """An MoE model's sweep also varies plan.expert_model_parallel_size over the divisors of its
    expert count, in Python as on the command line."""
    overrides = {"model.num_experts": 4, "plan.moe_token_dispatcher_type": "alltoall"}
    scenario = megasim.load(SMALL)
    for key, value in overrides.items():
        scenario.set(key, value)
    frame = megasim.sweep(scenario, max_micro_batch_size=1)
    assert "plan.expert_model_parallel_size" in frame.columns
    assert set(frame["plan.expert_model_parallel_size"].astype(str)) == {"1", "2", "4"}
    path = tmp_path / "cli_moe_sweep.csv"
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    cli("sweep", SMALL, *sets, "--max-micro-batch", 1, "--csv", path)
    assert_same(frame, read_csv(path))
