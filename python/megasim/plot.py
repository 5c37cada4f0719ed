"""Plots of megasim reports (matplotlib): the per-rank heat map of an iteration, a timeline of chosen
ranks from its trace, a sweep's throughput against memory, and a campaign's ETTR against the
checkpoint interval.

Every function returns a matplotlib Figure built without pyplot (so it needs no display and keeps
no global state; saving goes through Agg) and draws into `ax` instead when one is given. In a
notebook the returned figure shows itself; elsewhere call `fig.savefig("plot.png")`.

    python -m megasim.plot REPORT [--out PNG]

draws a file the command line wrote, after what it holds: a run report (report.json, `megasim run
--json`) → heat_map; a Perfetto trace (trace.json) → timeline; a campaign report with a checkpoint
sweep (`megasim campaign --sweep-checkpoint-interval --json`) → ettr; a CSV of plans → sweep.
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

# Perfetto thread ids of the trace (scenarios/perfetto_trace.h).
_STREAMS = {0: "compute", 1: "tp", 2: "pp", 3: "dp"}
# Compute tasks by the first word of their name ("F mb3 c1", "B mb3 c1", "optimizer", ...), the
# communication streams by stream.
_COLOURS = {"F": "tab:blue", "B": "tab:orange", "optimizer": "tab:purple",
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


def _trace_dict(trace, ranks):
    from .reports import RunReport

    if isinstance(trace, RunReport):
        return trace.trace_events(ranks=ranks, max_ranks=len(ranks) if ranks else 16)
    if isinstance(trace, (str, os.PathLike)):
        with open(_inputs.input_file("trace", trace, "a trace.json megasim wrote")) as f:
            return json.load(f)
    return trace


def timeline(trace, ranks=None, max_ranks=8, ax=None):
    """The iteration of `ranks` (default: the first `max_ranks` ranks of the trace), one row per rank
    and stream (compute, tp, pp, dp), time in ms. `trace`: a RunReport, a Perfetto trace dict or
    the path of a trace.json megasim wrote."""
    events = [e for e in _trace_dict(trace, ranks)["traceEvents"] if e.get("ph") == "X"]
    chosen = sorted(set(ranks) if ranks else {e["pid"] for e in events})[: None if ranks else max_ranks]
    if not chosen:
        raise ValueError("trace: no task events for the chosen ranks")
    rows = sorted({(e["pid"], e["tid"]) for e in events if e["pid"] in chosen}, reverse=True)
    fig, ax = _figure(ax, (11, 1.5 + 0.3 * len(rows)))
    used = set()
    for y, (pid, tid) in enumerate(rows):
        spans = [e for e in events if e["pid"] == pid and e["tid"] == tid]
        kinds = [e["name"].split()[0] if tid == 0 else _STREAMS.get(tid, "") for e in spans]
        used.update(kinds)
        colours = [_COLOURS.get(k, "tab:gray") for k in kinds]
        ax.broken_barh([(e["ts"] / 1e3, e["dur"] / 1e3) for e in spans], (y - 0.4, 0.8), facecolors=colours)
    ax.set_yticks(range(len(rows)), [f"rank {pid} {_STREAMS.get(tid, tid)}" for pid, tid in rows])
    names = {"F": "forward", "B": "backward", "data": "data loading"}
    ax.legend(handles=[Patch(color=_COLOURS.get(k, "tab:gray"), label=names.get(k, k)) for k in sorted(used)],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_xlabel("time (ms)")
    ax.set_title(f"iteration timeline of ranks {', '.join(map(str, chosen))}")
    return fig


def sweep(frame, x="memory_gib", y="tokens_per_s", color="tp", memory_limit_gib=None, ax=None):
    """Plans of a sweep as points, `y` against `x`, one colour per value of the plan dimension `color`
    (tp, pp, dp, vpp, micro_batch_size, ...); the best `y` is ringed. `frame`: a pandas DataFrame
    with those columns (megasim.sweep gives one, as does megasim.reports_frame of RunReports) or a
    list of RunReports; memory_gib is derived from a sweep's peak_memory_bytes when absent. Rows
    without a finite x or y (plans rejected or not fitting) are left out. Plans only screened (status
    "screened": one replica for all, an upper bound) are drawn hollow in their colour."""
    if isinstance(frame, (list, tuple)):
        from .reports import reports_frame

        frame = reports_frame(frame)
    if "memory_gib" not in frame.columns and "peak_memory_bytes" in frame.columns:
        frame = frame.assign(memory_gib=frame["peak_memory_bytes"] / 2**30)
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
    if memory_limit_gib is not None:
        ax.axvline(memory_limit_gib, color="black", linestyle="--", linewidth=1, label="memory limit")
    ax.legend(title=color)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{len(frame)} plans: {y} against {x}" + (f" (hollow: {int(screened.sum())} screened, an upper bound)"
                                                            if screened.any() else ""))
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


def kind(path):
    """What a report file holds, as the name of the function that draws it: heat_map, timeline,
    ettr or sweep. Raises ValueError for anything else."""
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
        if "heat_map" in data:
            return "heat_map"
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
        return {"heat_map": heat_map, "ettr": ettr}[what](json.load(f), **options)


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
