"""Each plot is drawn from a real report (Python's or a file the CLI wrote) and saved as a PNG."""
import json
import math

import pytest

import megasim
import megasim.plot
from conftest import SMALL, assert_png, cli, plot_cli


@pytest.fixture(scope="module")
def small_report():
    return megasim.run(megasim.load(SMALL))


@pytest.fixture(scope="module")
def campaign_sweep():
    return megasim.campaign(megasim.load(SMALL), days=2, seeds=2, sweep=True, intervals=[600, 1800, 3600])


def test_heat_map_has_one_cell_per_replica_and_stage(small_report, tmp_path):
    fig = megasim.plot.heat_map(small_report)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (small_report.plan["dp"], small_report.plan["pp"])
    hm = small_report.heat_map
    assert image[3, 1] == hm["slowdown"][3 * hm["pp"] + 1]  # row-major: replica * pp + stage
    fig.savefig(tmp_path / "heat.png")
    assert_png(tmp_path / "heat.png")


def test_samples_plot_draws_every_sample_and_the_band(tmp_path):
    s = megasim.load(SMALL)
    s.set("stragglers.jitter_cv", 0.02)
    report = megasim.run(s, samples=5)
    fig = megasim.plot.samples(report)
    time_ax, mfu_ax = fig.axes
    times = report["samples"]["iteration_time_s"]
    assert list(time_ax.collections[-1].get_offsets()[:, 1]) == times["values"]
    assert [100 * m for m in report["samples"]["mfu"]["values"]] == list(mfu_ax.collections[-1].get_offsets()[:, 1])
    band = time_ax.collections[0].get_paths()[0].vertices[:, 1]
    assert math.isclose(band.min(), times["p5"]) and math.isclose(band.max(), times["p95"])
    with pytest.raises(ValueError, match="no samples"):
        megasim.plot.samples(megasim.run(megasim.load(SMALL)))
    path = tmp_path / "report.json"
    report.save(tmp_path)
    assert megasim.plot.kind(path) == "samples"
    out = plot_cli(path, "--out", tmp_path / "samples.png")
    assert out.returncode == 0, out.stderr
    assert_png(tmp_path / "samples.png")


def test_explain_waterfall_climbs_from_a_to_b(tmp_path):
    b = megasim.load(SMALL)
    b.set("plan.global_batch_size", 256)
    report = megasim.explain(megasim.load(SMALL), b)
    fig = megasim.plot.explain(report)
    bars = fig.axes[0].patches
    assert len(bars) == len(report["steps"]) + 2 == 12  # A, six breakdown mechanisms, four production ones, B
    assert math.isclose(bars[0].get_height(), 100 * report["a"]["mfu"])
    assert math.isclose(bars[-1].get_height(), 100 * report["b"]["mfu"])
    for bar, step in zip(bars[1:-1], report["steps"]):
        assert math.isclose(bar.get_height(), 100 * step["mfu_change"], abs_tol=1e-12)
    # Each step starts where the one before ended; the last ends at B's MFU.
    assert math.isclose(bars[-2].get_y() + bars[-2].get_height(), 100 * report["b"]["mfu"], rel_tol=1e-9)
    path = tmp_path / "explain.json"
    path.write_text(json.dumps(report))
    assert megasim.plot.kind(path) == "explain"
    out = plot_cli(path, "--out", tmp_path / "explain.png")
    assert out.returncode == 0, out.stderr
    assert_png(tmp_path / "explain.png")


def test_timeline_has_a_row_per_rank_and_stream(small_report, tmp_path):
    ranks = [0, 2]
    fig = megasim.plot.timeline(small_report, ranks=ranks)
    events = [e for e in small_report.trace_events(ranks=ranks)["traceEvents"] if e["ph"] == "X"]
    rows = {(e["pid"], e["tid"]) for e in events}
    assert len(fig.axes[0].get_yticks()) == len(rows)
    # One bar per task.
    assert sum(len(c.get_paths()) for c in fig.axes[0].collections) == len(events)
    fig.savefig(tmp_path / "timeline.png")
    assert_png(tmp_path / "timeline.png")


def test_timeline_by_default_shows_one_rank_per_stage(small_report):
    fig = megasim.plot.timeline(small_report)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ranks = {int(label.split()[1]) for label in labels}
    # TP rank 0 of replica 0 of each of the 2 stages: ranks 0 and tp x dp = 32 (order tp-dp-pp).
    plan = small_report.plan
    assert ranks == {stage * plan["tp"] * plan["dp"] for stage in range(plan["pp"])}


def test_timeline_spreads_its_default_ranks_from_the_first_stage_to_the_last():
    # 12 stages of two ranks each (the trace's "megasim" units), at most 4 rows of ranks: stages 0,
    # 4, 7 and 11 (evenly spaced, rounded), the lowest rank of each.
    units = [{"ranks": [2 * s, 2 * s + 1], "stage": s, "replica": 0} for s in range(12)]
    events = [{"ph": "X", "pid": r, "tid": 0, "name": "F mb0", "ts": 0, "dur": 1} for r in range(24)]
    fig = megasim.plot.timeline({"traceEvents": events, "megasim": {"units": units}}, max_ranks=4)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(int(label.split()[1]) for label in labels) == [0, 8, 14, 22]


def _pixels(fig):
    import numpy

    return numpy.asarray(_rendered(fig).buffer_rgba())[..., :3] / 255


def test_timeline_forward_and_backward_stay_apart_from_idle_and_data_loading_at_full_zoom():
    import numpy
    from matplotlib.colors import to_rgb

    # 4,000 alternating 1-us forwards and backwards (far narrower than a pixel) after 2 ms of data
    # loading, on one compute row: the blend the bars become must be neither white nor gray.
    events = [{"ph": "X", "pid": 0, "tid": 0, "name": "data loading", "ts": 0, "dur": 2000}]
    events += [{"ph": "X", "pid": 0, "tid": 0, "name": "F mb0" if i % 2 == 0 else "B mb0", "ts": 2000 + i, "dur": 1}
               for i in range(4000)]
    fig = megasim.plot.timeline({"traceEvents": events})
    ax = fig.axes[0]
    image = _pixels(fig)
    height = image.shape[0]

    def colour_at(t_ms):
        x, y = ax.transData.transform((t_ms, 0))
        return image[int(height - y), int(x)]

    loading, blend = colour_at(1.0), colour_at(4.0)
    assert numpy.linalg.norm(loading - to_rgb("tab:gray")) < 0.05  # what the row shows for data loading
    assert numpy.linalg.norm(blend - loading) > 0.3, blend
    assert numpy.linalg.norm(blend - 1) > 0.3, blend  # not idle
    # Every mix of the two colours, not only this one.
    forward, backward = (numpy.array(to_rgb(megasim.plot._COLOURS[k])) for k in ("F", "B"))
    for t in numpy.linspace(0, 1, 21):
        mix = t * forward + (1 - t) * backward
        assert numpy.linalg.norm(mix - to_rgb("tab:gray")) > 0.3 and numpy.linalg.norm(mix - 1) > 0.3


def _rendered(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas


def test_sweep_plot_names_its_axes_with_units_and_its_title_fits(tmp_path):
    frame = megasim.sweep(megasim.load(SMALL), max_micro_batch_size=1)
    fig = megasim.plot.sweep(frame)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "peak memory per GPU (GB)" and ax.get_ylabel() == "throughput (tokens/s)"
    renderer = _rendered(fig).get_renderer()
    title = ax.title.get_window_extent(renderer)
    assert fig.bbox.x0 <= title.x0 and title.x1 <= fig.bbox.x1, (title, fig.bbox)
    assert megasim.plot._axis_label("compute_s") == "compute (s)"
    assert megasim.plot._axis_label("plan.expert_model_parallel_size") == "expert-parallel size"
    assert megasim.plot._axis_label("plan.context_parallel_size") == "context-parallel size"


def test_sweep_plot_of_several_plans(tmp_path):
    plans = [(1, 1, 1), (2, 1, 1), (2, 2, 1), (1, 2, 2), (2, 2, 2)]  # (tp, pp, micro_batch_size)
    reports = []
    for tp, pp, mbs in plans:
        s = megasim.load(SMALL)
        s.set("plan.tensor_model_parallel_size", tp)
        s.set("plan.pipeline_model_parallel_size", pp)
        s.set("plan.micro_batch_size", mbs)
        reports.append(megasim.run(s))
    frame = megasim.reports_frame(reports)
    assert list(frame[["tp", "pp", "micro_batch_size"]].itertuples(index=False, name=None)) == plans
    assert (frame["dp"] * frame["tp"] * frame["pp"] == 64).all()
    assert all(0 < m < 85.9 for m in frame["memory_gb"])  # fits on the scenario's 80 GiB (85.9 GB) GPU
    assert (frame["memory_gb"] == frame["peak_memory_bytes"] / 1e9).all()
    fig = megasim.plot.sweep(frame, color="tp", memory_limit_gb=80)
    # One point set per TP degree, plus the ring around the best.
    assert len(fig.axes[0].collections) == frame["tp"].nunique() + 1
    fig.savefig(tmp_path / "sweep.png")
    assert_png(tmp_path / "sweep.png")
    # The same frame as a CSV, as `megasim sweep --csv` will write, through python -m megasim.plot.
    frame.to_csv(tmp_path / "sweep.csv", index=False)
    out = plot_cli(tmp_path / "sweep.csv", "--color", "pp", "--out", tmp_path / "sweep_cli.png")
    assert out.returncode == 0, out.stderr
    assert_png(tmp_path / "sweep_cli.png")


def test_ettr_marks_young_and_daly(campaign_sweep, tmp_path):
    fig = megasim.plot.ettr(campaign_sweep)
    labels = [line.get_label() for line in fig.axes[0].lines]
    for key, name in (("young_interval_s", "Young"), ("daly_interval_s", "Daly")):
        assert any(label.startswith(name) for label in labels) == math.isfinite(campaign_sweep[key] or math.nan)
    fig.savefig(tmp_path / "ettr.png")
    assert_png(tmp_path / "ettr.png")


def test_plot_cli_draws_what_the_cli_wrote(small_run_dir, tmp_path):
    for name in ("report.json", "trace.json"):
        out = plot_cli(small_run_dir / name, "--out", tmp_path / f"{name}.png")
        assert out.returncode == 0, out.stderr
        assert_png(tmp_path / f"{name}.png")
    assert megasim.plot.kind(small_run_dir / "report.json") == "heat_map"
    assert megasim.plot.kind(small_run_dir / "trace.json") == "timeline"
    campaign = tmp_path / "campaign.json"
    campaign.write_text(cli("campaign", SMALL, "--days", "2", "--seeds", "2", "--sweep-checkpoint-interval",
                            "--intervals", "600,1800,3600", "--json").stdout)
    assert megasim.plot.kind(campaign) == "ettr"
    out = plot_cli(campaign)  # default output: campaign.png next to it
    assert out.returncode == 0, out.stderr
    assert_png(tmp_path / "campaign.png")


def test_plot_cli_refuses_what_it_cannot_draw(tmp_path):
    no_sweep = tmp_path / "campaign.json"
    no_sweep.write_text(cli("campaign", SMALL, "--days", "1", "--seeds", "1", "--json").stdout)
    out = plot_cli(no_sweep)
    assert out.returncode == 2 and "--sweep-checkpoint-interval" in out.stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    out = plot_cli(other)
    assert out.returncode == 2 and "not a report megasim.plot draws" in out.stderr
    assert not (tmp_path / "other.png").exists()
