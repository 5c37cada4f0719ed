"""Report objects equal the CLI's reports for the same scenario and seed (run, its files, campaign
with a checkpoint sweep, whatif), errors match the CLI's, and runs release the GIL."""
import math
import threading
import time

import numpy as np
import pytest

import megasim
from conftest import SMALL, cli_error, cli_json


def test_run_report_is_the_cli_report_with_attributes(small_run_dir):
    report = megasim.run(megasim.load(SMALL))
    assert isinstance(report, megasim.RunReport)
    assert report.to_dict() == cli_json("run", SMALL)
    assert report.mfu == report["mfu"] and report.plan == report.to_dict()["plan"]
    # MegaScale's convention (full attention) is the same number without a sliding window.
    assert report.mfu_full_attention == report.mfu
    assert report.full_attention_flop_convention.startswith("megascale2024")
    assert (report.plan["tp"], report.plan["pp"], report.plan["dp"]) == (2, 2, 16)
    with pytest.raises(AttributeError, match="no_such_number"):
        report.no_such_number


def test_samples_are_the_cli_samples_and_numpy_reads_the_same_spread():
    s = megasim.load(SMALL)
    s.set("stragglers.jitter_cv", 0.02)
    report = megasim.run(s, samples=4)
    assert report.to_dict() == cli_json("run", SMALL, "--set", "stragglers.jitter_cv=0.02", "--samples", "4")
    samples = report["samples"]
    assert samples["count"] == 4 and len(samples["seeds"]) == 4 and samples["seeds"][0] == s.get("simulation.seed")
    times = samples["iteration_time_s"]
    assert times["values"][0] == report.iteration_time_s
    for q, key in ((50, "median"), (5, "p5"), (95, "p95")):
        assert math.isclose(np.percentile(times["values"], q), times[key], rel_tol=1e-12)
    assert "samples" not in megasim.run(s).to_dict()
    with pytest.raises(ValueError, match="--samples"):
        megasim.run(s, samples=0)


def test_explain_is_the_cli_explain_and_its_steps_sum_to_the_difference():
    a = megasim.load(SMALL)
    b = megasim.load(SMALL)
    b.set("plan.global_batch_size", 256)
    report = megasim.explain(a, b)
    assert report == cli_json("explain", SMALL, "--b", "plan.global_batch_size=256")
    assert [s["mechanism"] for s in report["steps"]] == ["compute", "tp_exposed", "pp_exposed", "dp_exposed",
                                                         "bubble", "waiting", "stragglers", "collisions",
                                                         "host_overheads", "interaction"]
    assert math.isclose(sum(s["mfu_change"] for s in report["steps"]), report["b"]["mfu"] - report["a"]["mfu"],
                        abs_tol=1e-12)


def test_save_writes_the_files_of_run_out(small_run_dir, tmp_path):
    report = megasim.run(megasim.load(SMALL))
    report_path, binary_path, trace_path = report.save(tmp_path, max_ranks=0)
    assert open(report_path, "rb").read() == (small_run_dir / "report.json").read_bytes()
    assert open(binary_path, "rb").read() == (small_run_dir / "trace.bin").read_bytes()
    assert open(trace_path, "rb").read() == (small_run_dir / "trace.json").read_bytes()


def test_trace_holds_the_default_ranks_and_their_streams():
    report = megasim.run(megasim.load(SMALL))
    events = report.trace["traceEvents"]
    ranks = {e["pid"] for e in events if e["ph"] == "X"}
    # TP rank 0 of every stage, replica by replica, 16 at most: 8 replicas x 2 stages.
    assert len(ranks) == 16 and all(r % report.plan["tp"] == 0 for r in ranks)
    # Every thread is named after its stream, tid % 4 (further lanes of a stream: "pp 2", ...).
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    streams = ("compute", "tp", "pp", "dp")
    for e in events:
        if e["ph"] == "X":
            assert threads[(e["pid"], e["tid"])].split()[0] == streams[e["tid"] % 4]
    # Every task ends by the end of the iteration (ts, dur in microseconds).
    end_us = max(e["ts"] + e["dur"] for e in events if e["ph"] == "X")
    assert end_us == pytest.approx(report.iteration_time_s * 1e6, rel=1e-6)
    chosen = report.trace_events(ranks=[0, 5])
    assert {e["pid"] for e in chosen["traceEvents"] if e["ph"] == "X"} == {0, 5}


def test_campaign_sweep_matches_cli():
    intervals = [600, 1800, 3600]
    from_python = megasim.campaign(megasim.load(SMALL), days=2, seeds=2, sweep=True, intervals=intervals)
    from_cli = cli_json("campaign", SMALL, "--days", "2", "--seeds", "2", "--sweep-checkpoint-interval",
                        "--intervals", ",".join(map(str, intervals)))
    assert from_python == from_cli
    assert [row["interval_s"] for row in from_python.sweep] == intervals
    assert from_python.best_interval_s in intervals


def test_whatif_matches_cli(small_run_dir):
    trace = small_run_dir / "trace.json"
    from_python = megasim.whatif(trace, slowest=2)
    assert isinstance(from_python, megasim.WhatIfReport)
    assert from_python == cli_json("whatif", trace, "--slowest", "2")
    # The in-memory trace of the same run: the same recorded iteration and the same what-ifs.
    in_memory = megasim.whatif(megasim.run(megasim.load(SMALL)), slowest=2)
    assert in_memory.iteration_time_s == pytest.approx(from_python.iteration_time_s, rel=1e-9)
    assert [w["name"] for w in in_memory.whatif] == [w["name"] for w in from_python.whatif]
    # trace.bin, the same recording: the same report, from the file or from the folder.
    assert megasim.whatif(small_run_dir / "trace.bin", slowest=2) == from_python
    assert megasim.whatif(small_run_dir, slowest=2) == from_python


def test_errors_are_the_cli_messages(tmp_path):
    partial = megasim.run(megasim.load(SMALL)).save(tmp_path)[2]  # trace.json: 16 of the 64 ranks
    with pytest.raises(ValueError) as e:
        megasim.whatif(partial)
    assert str(e.value) == cli_error("whatif", partial) and "--max-trace-ranks 0" in str(e.value)
    with pytest.raises(ValueError) as e:
        megasim.whatif(partial, slowest=-1)
    assert str(e.value) == cli_error("whatif", partial, "--slowest", "-1")
    too_big = megasim.load(SMALL)
    too_big.set("plan.micro_batch_size", 64)
    with pytest.raises(ValueError) as e:
        megasim.run(too_big)
    assert str(e.value) == cli_error("run", SMALL, "--set", "plan.micro_batch_size=64")
    with pytest.raises(ValueError) as e:
        megasim.run(backend="tpu")
    assert str(e.value) == cli_error("run", SMALL, "--backend", "tpu")
    for backend in ("cpu", "cuda"):
        with pytest.raises(ValueError, match=f"megasim run SCENARIO --backend {backend}"):
            megasim.run(megasim.load(SMALL), backend=backend)


def test_runs_release_the_gil():
    # A run long enough to see: the 175B plan on 1,024 GPUs.
    s = megasim.load(SMALL.parents[2] / "scenarios" / "megascale" / "175b_megatron.toml")
    s.set("cluster.gpus", 1024)
    s.set("stragglers.enabled", False)  # one simulation a run, without the production profile's what-ifs
    start = time.perf_counter()
    expected = megasim.run(s).to_dict()
    alone_s = time.perf_counter() - start

    spans, results = [], []

    def run():
        begin = time.perf_counter()
        results.append(megasim.run(s).to_dict())
        spans.append((begin, time.perf_counter()))

    # This thread keeps running Python while both runs are in flight; holding the GIL, a run would
    # stop it for the run's whole length (from Thread.start on, which waits for the thread to start).
    threads = [threading.Thread(target=run) for _ in range(2)]
    last, longest_gap = time.perf_counter(), 0.0
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.001)
        now = time.perf_counter()
        longest_gap, last = max(longest_gap, now - last), now
    for t in threads:
        t.join()
    assert results == [expected, expected]
    assert longest_gap < alone_s / 2, (longest_gap, alone_s)
    # The two runs were in flight at the same time.
    (b0, e0), (b1, e1) = spans
    assert max(b0, b1) < min(e0, e1)
