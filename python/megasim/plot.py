"""Plots of megasim reports (matplotlib): the per-rank heat map of an iteration, a timeline of chosen
ranks from its trace, the spread of an iteration over samples, a sweep's throughput against memory,
and a campaign's ETTR against the checkpoint interval.

Every function returns a matplotlib Figure built without pyplot (so it needs no display and keeps
no global state; saving goes through Agg) and draws into `ax` instead when one is given. In a
notebook the returned figure shows itself; elsewhere call `fig.savefig("plot.png")`.

    python -m megasim.plot REPORT [--out PNG]

draws a file the command line wrote, after what it holds: a run report (report.json, `megasim run
--json`) → heat_map, or samples when it has them (`--samples N`); a Perfetto trace (trace.json) → timeline; a campaign report with a checkpoint
sweep (`megasim campaign --sweep-checkpoint-interval --json`) → ettr; `megasim explain --json` → explain
(a waterfall); a CSV of plans → sweep.
"""
import argparse
import io
import json
import math
import numbers
import os
import sys

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullFormatter

from . import _inputs, _megasim

# Perfetto threads of the trace (scenarios/report/perfetto_tracks.h): tid = stream + 4 x lane, a stream's
# lanes holding the transfers that overlap; each thread is named by a "thread_name" event ("pp 2").
_STREAMS = ("compute", "tp", "pp", "dp")
# Compute tasks by the first word of their name ("F mb3 c1", "B mb3 c1", "optimizer", ...), the
# communication streams by stream. Forward and backward are a light and a dark blue: at the zoom of a
# whole iteration their bars are narrower than a pixel and blend, and any blend of two blues stays
# blue, apart from idle (white) and data loading (gray); blue and orange, complementary, blend to
# a gray-brown within 0.06 of data loading's gray.
_COLOURS = {"F": "#4c9be8", "B": "#0b3d91", "optimizer": "tab:purple",
            "data": "tab:gray", "tp": "tab:green", "pp": "tab:red", "dp": "tab:brown"}


def _figure(ax, size):
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def heat_map(report, value="slowdown", ax=None):
    """The DP replica × PP stage heat map of a run report (a RunReport or the dict of report.json):
    `value` is "slowdown" (compute over its stage's mean) or "compute_s". The image's array has one
    row per replica and one column per stage."""
    hm = report["heat_map"]
    if value not in ("slowdown", "compute_s"):
        raise ValueError(f"value = {value} is invalid: expected slowdown or compute_s")
    dp, pp = hm["dp"], hm["pp"]
    rows = [hm[value][r * pp:(r + 1) * pp] for r in range(dp)]
    fig, ax = _figure(ax, (max(5.0, 2.5 + 0.5 * pp), max(3.5, 1.5 + 0.25 * min(dp, 64))))
    image = ax.imshow(rows, aspect="auto", interpolation="nearest", cmap="RdYlGn_r" if value == "slowdown" else "viridis")
    fig.colorbar(image, ax=ax, label="compute / stage mean" if value == "slowdown" else "compute + exposed TP (s)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("data-parallel replica")
    ax.set_title(f"{value} per rank\niteration {report['iteration_time_s'] * 1e3:.1f} ms, MFU {report['mfu']:.1%}")
    return fig


def _spread(stages, count):
    """At most `count` of `stages` (sorted), evenly from the first to the last."""
    if len(stages) <= count:
        return stages
    step = (len(stages) - 1) / max(1, count - 1)
    return sorted({stages[round(i * step)] for i in range(count)})


def _trace_dict(trace, ranks, max_ranks):
    from .reports import RunReport

    if isinstance(trace, RunReport):
        if not ranks:  # TP rank 0 of replica 0 of the spread stages (rank order tp-cp-dp-pp)
            plan = trace.plan
            stage_ranks = plan["tp"] * plan.get("cp", 1) * plan["dp"]
            ranks = [s * stage_ranks for s in _spread(list(range(plan["pp"])), max_ranks)]
        return trace.trace_events(ranks=ranks)
    if isinstance(trace, (str, os.PathLike)):
        with open(_inputs.input_file("trace", trace, "a trace.json megasim wrote")) as f:
            return json.load(f)
    return trace


def _stream(tid):
    return _STREAMS[tid % len(_STREAMS)]


def _default_ranks(trace, events, max_ranks):
    """One rank per pipeline stage (the lowest rank of the lowest replica the trace holds), from the
    trace's "megasim" units; stages spread evenly from the first to the last when there are more
    than `max_ranks`. A trace without units: its first `max_ranks` ranks."""
    by_stage = {}
    for unit in (trace.get("megasim") or {}).get("units") or []:
        if unit["ranks"]:
            by_stage.setdefault(unit["stage"], []).append((unit["replica"], min(unit["ranks"])))
    if not by_stage:
        return sorted({e["pid"] for e in events})[:max_ranks]
    return sorted(min(by_stage[s])[1] for s in _spread(sorted(by_stage), max_ranks))


def timeline(trace, ranks=None, max_ranks=8, ax=None):
    """The iteration of `ranks` (default: one rank per pipeline stage, at most `max_ranks` stages
    spread from the first to the last), one row per rank and thread (compute, tp, pp, dp, and a
    stream's further lanes where its transfers overlap: "pp 2"), time in ms. `trace`: a RunReport,
    a Perfetto trace dict or the path of a trace.json megasim wrote."""
    data = _trace_dict(trace, ranks, max_ranks)
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    chosen = sorted(set(ranks)) if ranks else _default_ranks(data, events, max_ranks)
    if not chosen:
        raise ValueError("trace: no task events for the chosen ranks")
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in data["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    rows = sorted({(e["pid"], e["tid"]) for e in events if e["pid"] in chosen}, reverse=True)
    fig, ax = _figure(ax, (11, 1.5 + 0.3 * len(rows)))
    used = set()
    for y, (pid, tid) in enumerate(rows):
        spans = [e for e in events if e["pid"] == pid and e["tid"] == tid]
        kinds = [e["name"].split()[0] if _stream(tid) == "compute" else _stream(tid) for e in spans]
        used.update(kinds)
        colours = [_COLOURS.get(k, "tab:gray") for k in kinds]
        ax.broken_barh([(e["ts"] / 1e3, e["dur"] / 1e3) for e in spans], (y - 0.4, 0.8), facecolors=colours)
    ax.set_yticks(range(len(rows)), [f"rank {pid} {names.get((pid, tid), _stream(tid))}" for pid, tid in rows])
    names = {"F": "forward", "B": "backward", "data": "data loading"}
    order = [k for k in _COLOURS if k in used] + sorted(used - set(_COLOURS))
    ax.legend(handles=[Patch(color=_COLOURS.get(k, "tab:gray"), label=names.get(k, k)) for k in order],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_xlabel("time (ms)")
    ax.set_title(f"iteration timeline of ranks {', '.join(map(str, chosen))}")
    return fig


# Axis names of the columns a sweep's frame has, with their units; other columns get their name
# and the unit their suffix says (_axis_label).
_LABELS = {"memory_gb": "peak memory per GPU (GB)", "peak_memory_bytes": "peak memory per GPU (bytes)",
           "tokens_per_s": "throughput (tokens/s)", "mfu": "MFU (model FLOPs / peak)",
           "hfu": "HFU (hardware FLOPs / peak)", "iteration_time_s": "iteration time (s)",
           "tp": "tensor-parallel size", "pp": "pipeline-parallel size", "dp": "data-parallel size",
           "vpp": "model chunks per stage", "micro_batch_size": "micro-batch size", "gpus": "GPUs",
           # the keys a sweep searches for MoE and long-context scenarios, and today's schedule
           "plan.expert_model_parallel_size": "expert-parallel size",
           "plan.expert_tensor_parallel_size": "expert tensor-parallel size",
           "plan.context_parallel_size": "context-parallel size",
           "plan.microbatch_group_size_per_vp_stage": "micro-batches per group (interleaved schedule)"}
_SUFFIX_UNITS = (("_per_s", "/s"), ("_bytes", "bytes"), ("_gb", "GB"), ("_s", "s"))


def _axis_label(column):
    if column in _LABELS:
        return _LABELS[column]
    for suffix, unit in _SUFFIX_UNITS:
        if column.endswith(suffix):
            return f"{column[: -len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def sweep(frame, x="memory_gb", y="tokens_per_s", color="tp", memory_limit_gb=None, ax=None):
    """Plans of a sweep as points, `y` against `x`, one colour per value of the plan dimension `color`
    (tp, pp, dp, vpp, micro_batch_size, ...); the best `y` is ringed; the axes are named with their
    units. `frame`: a pandas DataFrame with those columns (megasim.sweep gives one, as does
    megasim.reports_frame of RunReports) or a list of RunReports; memory_gb (GB, 1e9 bytes, as the
    text reports and HBM capacities) is derived from a sweep's peak_memory_bytes when absent.
    `memory_limit_gb` draws the GPU's capacity. Rows without a finite x or y (plans rejected or not
    fitting) are left out. Plans only screened (status "screened": one replica for all, an upper
    bound) are drawn hollow in their colour."""
    if isinstance(frame, (list, tuple)):
        from .reports import reports_frame

        frame = reports_frame(frame)
    if "memory_gb" not in frame.columns and "peak_memory_bytes" in frame.columns:
        frame = frame.assign(memory_gb=frame["peak_memory_bytes"] / 1e9)
    for column in (x, y, color):
        if column not in frame.columns:
            raise ValueError(f"{column} is not a column of the sweep (columns: {', '.join(map(str, frame.columns))})")
    frame = frame[frame[x].map(_finite) & frame[y].map(_finite)]
    if frame.empty:
        raise ValueError(f"sweep: no row has a finite {x} and {y}")
    fig, ax = _figure(ax, (7, 4.5))
    screened = frame["status"] == "screened" if "status" in frame.columns else frame[y].map(lambda v: False)
    for value, group in frame.groupby(color, sort=True):
        full = group[~screened.loc[group.index]]
        points = ax.scatter(full[x], full[y], label=f"{value}", alpha=0.8)
        bounds = group[screened.loc[group.index]]
        if not bounds.empty:
            ax.scatter(bounds[x], bounds[y], facecolors="none", edgecolors=points.get_facecolor()[:1], alpha=0.8)
    best = frame.loc[frame[y].idxmax()]
    ax.scatter([best[x]], [best[y]], s=200, facecolors="none", edgecolors="black", label="best")
    if memory_limit_gb is not None:
        ax.axvline(memory_limit_gb, color="black", linestyle="--", linewidth=1, label="HBM capacity")
    ax.legend(title=color)
    ax.set_xlabel(_axis_label(x))
    ax.set_ylabel(_axis_label(y))
    title = f"sweep: {len(frame)} plans"
    if screened.any():
        title += f"\nhollow: {int(screened.sum())} only screened (an upper bound)"
    ax.set_title(title, fontsize="medium")
    return fig


def _finite(v):
    return isinstance(v, numbers.Real) and math.isfinite(v)


def ettr(report, ax=None):
    """ETTR against the checkpoint interval of a campaign report with a checkpoint sweep (the mean
    over seeds with its p5-p95 band), with Young's and Daly's optimal intervals and the best one."""
    if "sweep" not in report:
        raise ValueError("campaign report: no checkpoint sweep; run megasim.campaign(..., sweep=True) or "
                         "megasim campaign --sweep-checkpoint-interval")
    rows = sorted(report["sweep"], key=lambda r: r["interval_s"])
    minutes = [r["interval_s"] / 60 for r in rows]
    fig, ax = _figure(ax, (7, 4.5))
    ax.fill_between(minutes, [r["ettr_p5"] for r in rows], [r["ettr_p95"] for r in rows], alpha=0.25, label="p5-p95")
    ax.plot(minutes, [r["ettr"] for r in rows], marker="o", label="mean ETTR")
    for key, name, style in (("young_interval_s", "Young", "--"), ("daly_interval_s", "Daly", ":")):
        if _finite(report.get(key)):
            ax.axvline(report[key] / 60, color="black", linestyle=style, label=f"{name} {report[key] / 60:.1f} min")
    best = report["best_interval_s"] / 60
    ax.scatter([best], [max(r["ettr"] for r in rows)], s=150, facecolors="none", edgecolors="red", zorder=3,
               label=f"best {best:.1f} min")
    ax.set_xscale("log")
    ticks = [m for i, m in enumerate(minutes) if i == 0 or m > 1.15 * minutes[i - 1]]  # no overlapping labels
    ax.set_xticks(ticks, [f"{m:.3g}" for m in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("checkpoint interval (min)")
    ax.set_ylabel("ETTR")
    ax.legend()
    ax.set_title("ETTR against checkpoint interval")
    return fig


def samples(report, ax=None):
    """The spread of a run report with samples (`megasim run --samples N`, megasim.run(samples=N)):
    each sample's iteration time and MFU as points, with the median and the p5-p95 band."""
    if "samples" not in report:
        raise ValueError("run report: no samples; run megasim.run(..., samples=N) or megasim run --samples N")
    fig, time_ax = _figure(ax, (7, 4.5))
    mfu_ax = time_ax.twinx()
    s = report["samples"]
    times, mfus = s["iteration_time_s"], s["mfu"]
    order = range(len(times["values"]))
    time_ax.fill_between([0, max(1, len(order) - 1)], times["p5"], times["p95"], alpha=0.2, color="tab:blue",
                         label="iteration time p5-p95")
    time_ax.axhline(times["median"], color="tab:blue", linestyle="--", label=f"median {times['median']:.4g} s")
    time_ax.scatter(order, times["values"], color="tab:blue", s=12, label="iteration time")
    mfu_ax.scatter(order, [100 * m for m in mfus["values"]], color="tab:orange", marker="x", s=12, label="MFU")
    mfu_ax.axhline(100 * mfus["median"], color="tab:orange", linestyle=":",
                   label=f"MFU median {100 * mfus['median']:.2f}% (p5-p95 {100 * mfus['p5']:.2f}-{100 * mfus['p95']:.2f}%)")
    time_ax.set_xlabel("sample (0: the scenario's seed)")
    time_ax.set_ylabel("iteration time (s)")
    mfu_ax.set_ylabel("MFU (%)")
    handles, labels = time_ax.get_legend_handles_labels()
    more, more_labels = mfu_ax.get_legend_handles_labels()
    time_ax.legend(handles + more, labels + more_labels, fontsize="small")
    time_ax.set_title(f"{s['count']} samples of the iteration")
    return fig


def explain(report, ax=None):
    """The waterfall of `megasim explain --json` (megasim.explain): A's MFU, one bar per mechanism
    from where the previous one ended (green up, red down), B's MFU."""
    if "steps" not in report or "a" not in report:
        raise ValueError("not an explain report: expected megasim.explain(a, b) or megasim explain ... --json")
    a, b = report["a"], report["b"]
    names = [f"A: {a['name']}\n{a['gpus']} GPUs"] + [s["mechanism"] for s in report["steps"]] + \
            [f"B: {b['name']}\n{b['gpus']} GPUs"]
    fig, ax = _figure(ax, (9, 4.5))
    level = 100 * a["mfu"]
    ax.bar(0, level, color="tab:blue")
    for i, s in enumerate(report["steps"], start=1):
        change = 100 * s["mfu_change"]
        ax.bar(i, change, bottom=level, color="tab:green" if change >= 0 else "tab:red")
        ax.annotate(f"{change:+.2f}", (i, max(level, level + change)), ha="center", va="bottom", fontsize="small")
        level += change
    ax.bar(len(names) - 1, 100 * b["mfu"], color="tab:blue")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylabel("MFU (%)")
    ax.set_ylim(0, 1.15 * max(100 * a["mfu"], 100 * b["mfu"], level))
    ax.set_title(f"MFU {100 * a['mfu']:.2f}% -> {100 * b['mfu']:.2f}% by mechanism")
    return fig


def kind(path):
    """What a report file holds, as the name of the function that draws it: heat_map (samples for a
    run report with samples), timeline, ettr, explain or sweep. Raises ValueError for anything else."""
    path = _inputs.input_file("report", path, "a report file megasim wrote")
    if str(path).endswith(".csv"):
        return "sweep"
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON or CSV ({e})") from None
    if isinstance(data, dict):
        if "traceEvents" in data:
            return "timeline"
        if "heat_map" in data and "samples" in data:
            return "samples"
        if "heat_map" in data:
            return "heat_map"
        if "steps" in data and "a" in data and "b" in data:
            return "explain"
        if "sweep" in data and "ettr" in data:
            return "ettr"
        if "ettr" in data:
            raise ValueError(f"{path}: a campaign report without a checkpoint sweep; write it with "
                             "megasim campaign ... --sweep-checkpoint-interval --json")
    raise ValueError(f"{path}: not a report megasim.plot draws (run report.json, trace.json, campaign --json "
                     "with --sweep-checkpoint-interval, or a sweep CSV)")


def draw(path, **options):
    """The figure of a report file (kind() says which); options go to the drawing function."""
    what = kind(path)
    if what == "sweep":
        from .sweeps import read_csv

        return sweep(read_csv(path), **options)
    if what == "timeline":
        return timeline(path, **options)
    with open(path) as f:
        return {"heat_map": heat_map, "samples": samples, "ettr": ettr, "explain": explain}[what](json.load(f),
                                                                                                  **options)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m megasim.plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="report.json, trace.json, campaign --json output or a sweep CSV")
    parser.add_argument("--out", help="the PNG to write (default: the report's name with .png)")
    parser.add_argument("--ranks", help="timeline: ranks to draw, comma-separated")
    parser.add_argument("--color", help="sweep: the plan dimension that colours the points (default tp)")
    args = parser.parse_args(argv)
    options = {}
    if args.ranks:
        options["ranks"] = [int(r) for r in args.ranks.split(",")]
    if args.color:
        options["color"] = args.color
    out = args.out or os.path.splitext(args.report)[0] + ".png"
    try:
        # Checked before drawing, written whole or not at all, as the CLI's outputs (output_files.h).
        _inputs.output_file("--out", out)
        png = io.BytesIO()
        draw(args.report, **options).savefig(png, format=os.path.splitext(out)[1][1:] or "png", dpi=120)
        _megasim._write_output_file(out, "--out", png.getvalue())
    except (ValueError, OSError, TypeError) as e:
        print(f"megasim.plot: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
