"""Every bad input to the Python API raises ValueError, with the command line's message where the
CLI takes the same input, and leaves no file behind: bad files and paths (folders, devices, FIFOs,
sizes), values of the wrong type or beyond 64 bits in a scenario, bad arguments of the studies, lists
with an item twice. None raises TypeError or RuntimeError, none aborts the interpreter."""
import os

import pytest

import megasim
from conftest import SMALL, cli_error


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """A folder with a FIFO, a regular file, a folder whose report.json is a FIFO, and a trace."""
    root = tmp_path_factory.mktemp("bad_inputs")
    os.mkfifo(root / "fifo")
    (root / "file").write_text("keep")
    (root / "out").mkdir()
    os.mkfifo(root / "out" / "report.json")
    (root / "folder").mkdir()
    return root


@pytest.fixture(scope="module")
def small_run():
    return megasim.run(megasim.load(SMALL))


def small_with(key, value):
    s = megasim.load(SMALL)
    s.set(key, value)
    return s


# (id, call(places, small_run), text the message holds, CLI arguments giving the same message or None).
CASES = [
    # Files read.
    ("load_folder", lambda p, r: megasim.load(p / "folder"), "directory", lambda p: ["plan", p / "folder"]),
    ("load_dev_zero", lambda p, r: megasim.load("/dev/zero"), "character device", lambda p: ["plan", "/dev/zero"]),
    ("load_fifo", lambda p, r: megasim.load(p / "fifo"), "FIFO", lambda p: ["plan", p / "fifo"]),
    ("load_empty_path", lambda p, r: megasim.load(""), '""', None),
    ("load_not_a_path", lambda p, r: megasim.load(5), "scenario = 5", None),
    ("calibration_file_folder", lambda p, r: megasim.run(small_with("calibration.file", str(p / "folder"))),
     "directory", lambda p: ["run", SMALL, "--set", f"calibration.file={p / 'folder'}"]),
    ("calibration_file_fifo", lambda p, r: megasim.run(small_with("calibration.file", str(p / "fifo"))),
     "FIFO", lambda p: ["run", SMALL, "--set", f"calibration.file={p / 'fifo'}"]),
    ("whatif_fifo", lambda p, r: megasim.whatif(p / "fifo"), "FIFO", lambda p: ["whatif", p / "fifo"]),
    ("whatif_folder", lambda p, r: megasim.whatif(p / "folder"), "directory", lambda p: ["whatif", p / "folder"]),
    ("whatif_not_a_path", lambda p, r: megasim.whatif(None), "trace = None", None),
    ("whatif_slowest_text", lambda p, r: megasim.whatif(r, slowest="two"), "--slowest", None),
    # Files written.
    ("save_into_fifo", lambda p, r: r.save(p / "fifo"), "FIFO", None),
    ("save_into_file", lambda p, r: r.save(p / "file"), "regular file", None),
    ("save_over_fifo", lambda p, r: r.save(p / "out"), "report.json", None),
    ("save_empty_path", lambda p, r: r.save(""), '""', None),
    ("save_ranks_twice", lambda p, r: r.save(p / "new", ranks=[1, 1]), "listed twice", None),
    ("save_rank_not_an_integer", lambda p, r: r.save(p / "new", ranks=[1.5]), "--trace-ranks", None),
    ("save_max_ranks_none", lambda p, r: r.save(p / "new", max_ranks=None), "--max-trace-ranks", None),
    ("trace_rank_out_of_range", lambda p, r: r.trace_events(ranks=[64]), "trace.ranks", None),
    ("trace_ranks_text", lambda p, r: r.trace_events(ranks="12"), "--trace-ranks", None),
    # Scenario values.
    ("set_int_beyond_64_bits", lambda p, r: megasim.Scenario().set("cluster.gpus", 2**64), "2^63", None),
    ("set_negative_beyond_64_bits", lambda p, r: megasim.Scenario().set("simulation.seed", -2**70), "2^63", None),
    ("set_list", lambda p, r: megasim.Scenario().set("cluster.gpus", [64]), "(a list)", None),
    ("set_none", lambda p, r: megasim.Scenario().set("cluster.gpus", None), "(a NoneType)", None),
    ("set_key_not_a_str", lambda p, r: megasim.Scenario().set(5, 1), "key", None),
    ("get_key_not_a_str", lambda p, r: megasim.Scenario().get(None), "key", None),
    ("from_dict_not_a_dict", lambda p, r: megasim.Scenario.from_dict([("cluster", {})]), "sections", None),
    ("from_dict_int_beyond_64_bits", lambda p, r: megasim.Scenario.from_dict({"cluster": {"gpus": 2**70}}),
     "cluster.gpus", None),
    ("from_toml_bytes", lambda p, r: megasim.Scenario.from_toml(b"[cluster]\ngpus = 8\n"), "text", None),
    ("slow_host_twice", lambda p, r: megasim.run(small_with("stragglers.slow_hosts", "3:1.2,3:1.1")), "listed twice",
     lambda p: ["run", SMALL, "--set", "stragglers.slow_hosts=3:1.2,3:1.1"]),
    # Study arguments.
    ("run_scenario_not_a_scenario", lambda p, r: megasim.run("175b.toml"), "scenario", None),
    ("plan_scenario_not_a_scenario", lambda p, r: megasim.plan(5), "scenario", None),
    ("topology_scenario_not_a_scenario", lambda p, r: megasim.topology([]), "scenario", None),
    ("collective_gpus_text", lambda p, r: megasim.collective(gpus="many"), "--gpus", None),
    ("collective_gpus_none", lambda p, r: megasim.collective(gpus=None), "--gpus", None),
    ("collective_gpus_beyond_64_bits", lambda p, r: megasim.collective(gpus=2**70), "--gpus", None),
    ("collective_op_not_a_str", lambda p, r: megasim.collective(op=3), "--op", None),
    ("campaign_days_none", lambda p, r: megasim.campaign(megasim.load(SMALL), days=None), "--days", None),
    ("campaign_seeds_fraction", lambda p, r: megasim.campaign(megasim.load(SMALL), seeds=2.5), "--seeds", None),
    ("campaign_intervals_not_a_list", lambda p, r: megasim.campaign(megasim.load(SMALL), sweep=True, intervals=600),
     "--intervals", None),
    ("campaign_interval_twice",
     lambda p, r: megasim.campaign(megasim.load(SMALL), days=1, seeds=1, sweep=True, intervals=[600, 600]),
     "listed twice",
     lambda p: ["campaign", SMALL, "--days", "1", "--seeds", "1", "--sweep-checkpoint-interval", "--intervals",
                "600,600"]),
    ("sweep_executor_not_an_executor", lambda p, r: megasim.sweep(megasim.load(SMALL), executor="threads"),
     "executor", None),
    ("sweep_scenario_not_a_scenario", lambda p, r: megasim.sweep(str(SMALL)), "scenario", None),
    ("sweep_confirm_top_none", lambda p, r: megasim.sweep(megasim.load(SMALL), confirm_top=None), "--confirm-top",
     None),
    ("sweep_gpus_text", lambda p, r: megasim.sweep(megasim.load(SMALL), gpus=["x"]), "--gpus", None),
    ("sweep_value_twice", lambda p, r: megasim.sweep(megasim.load(SMALL), vary="fabric.routing=ecmp,ecmp"),
     "listed twice", lambda p: ["sweep", SMALL, "--vary", "fabric.routing=ecmp,ecmp"]),
    ("sweep_gpus_twice", lambda p, r: megasim.sweep(megasim.load(SMALL), gpus=[64, 64]), "listed twice",
     lambda p: ["sweep", SMALL, "--gpus", "64", "64"]),
]


def listing(root):
    return sorted((str(path.relative_to(root)), path.is_symlink(), path.is_fifo(), path.is_dir())
                  for path in root.rglob("*"))


@pytest.mark.parametrize("call,text,cli_args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_value_error(places, small_run, call, text, cli_args):
    before = listing(places)
    with pytest.raises(ValueError) as error:
        call(places, small_run)
    message = str(error.value)
    assert text in message
    if cli_args is not None:
        assert message == cli_error(*cli_args(places))
    assert listing(places) == before  # nothing written, nothing replaced
