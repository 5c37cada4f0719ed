"""Report objects: read-only mappings of the CLI's JSON reports with attribute access.

A report compares equal to the dict `json.loads` makes of the CLI's `--json` output for the same
study (`report == cli_dict`), and `to_dict()` returns that dict. Top-level keys are also attributes
(`report.mfu`, `report.heat_map`); nested values are plain dicts and lists.
"""
import collections.abc
import copy
import json

from . import _inputs


class JsonReport(collections.abc.Mapping):
    """A study's report: the keys and values of its CLI `--json` output."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __getattr__(self, name):
        try:
            return self.__dict__["_data"][name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no key {name!r} (keys: {', '.join(self._data)})") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(self._data)})"

    def to_dict(self):
        """A deep copy of the report as the CLI's JSON (dicts, lists, numbers, strings)."""
        return copy.deepcopy(self._data)

    def to_json(self):
        return json.dumps(self._data, indent=2)


class RunReport(JsonReport):
    """One simulated iteration (`megasim run --json`): iteration_time_s, tokens_per_s, mfu, hfu,
    flop_convention, mfu_full_attention and full_attention_flop_convention (MegaScale's MFU: full
    attention even with a sliding window), breakdown, memory, plan, heat_map, critical_path, ...;
    plus its trace."""

    def __init__(self, run):
        super().__init__(json.loads(run.report_json()))
        self._run = run

    @property
    def trace(self):
        """The Perfetto trace as a dict ({"traceEvents": [...], "megasim": {...}}) with the ranks that
        `megasim run --out` writes by default (at most 16, whole pipelines first)."""
        return self.trace_events()

    def trace_events(self, ranks=None, max_ranks=16):
        """The Perfetto trace of `ranks` (each of them; default: TP rank 0 of every stage, replica by
        replica, at most `max_ranks` of them, 0: every rank), as a dict; see
        scenarios/report/perfetto_trace.h."""
        return json.loads(self._run.trace_json(_inputs.integers("--trace-ranks", ranks),
                                               _inputs.integer("--max-trace-ranks", max_ranks)))

    def save(self, directory, ranks=None, max_ranks=16):
        """Writes report.json, trace.bin and trace.json into `directory` (created if needed), the
        same bytes `megasim run --out DIR [--trace-ranks R,...] [--max-trace-ranks N]` writes
        (trace.bin: the recording in compact binary form, for `whatif`); max_ranks=0 keeps every
        rank, as `whatif` needs. All three files appear or none, and a path that is not a regular
        file (a FIFO, a device) is refused with ValueError, as the command line refuses it.
        Returns the three paths (report, trace.bin, trace.json)."""
        paths = self._run.save(_inputs.path("directory", directory), _inputs.integers("--trace-ranks", ranks),
                               _inputs.integer("--max-trace-ranks", max_ranks))
        return tuple(paths)

    def to_row(self):
        """The plan and the main numbers as one flat dict: the columns a sweep's DataFrame has
        (tokens_per_s, mfu, hfu, iteration_time_s, peak_memory_bytes, memory_gb, tp, pp, dp, vpp,
        micro_batch_size, num_microbatches, global_batch_size, layers_per_stage, world_size);
        peak_memory_bytes is the peak stage's total bytes per GPU, memory_gb the same in GB (1e9
        bytes, the unit of the text reports and of HBM capacities)."""
        row = {k: self._data[k] for k in ("iteration_time_s", "tokens_per_s", "mfu", "hfu")}
        memory = self._data.get("memory")
        row["peak_memory_bytes"] = memory["peak"]["total_bytes"] if memory else float("nan")
        row["memory_gb"] = row["peak_memory_bytes"] / 1e9
        row.update(self._data["plan"])
        return row


class CampaignReport(JsonReport):
    """A failure campaign (`megasim campaign --json`): ettr, ettr_p5, ettr_p95, lost_time_s,
    failures, checkpoint, timeline, ...; with a checkpoint sweep also sweep and best_interval_s."""


class WhatIfReport(JsonReport):
    """The what-if analysis of a recorded iteration (`megasim whatif --json`): iteration_time_s,
    replay_time_s, slowest, critical_ranks, whatif, slowdown_by_category_s."""


def reports_frame(reports):
    """A pandas DataFrame with one row per RunReport (RunReport.to_row()), e.g. to plot a hand-made
    sweep with megasim.plot.sweep."""
    import pandas as pd

    return pd.DataFrame([r.to_row() for r in reports])
