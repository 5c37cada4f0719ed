// Sweeps for Python's executors (megasim.sweep, python/megasim/sweep.py): enumerate_sweep here, each
// accepted candidate evaluated wherever an executor runs it, make_sweep_report and its writers here.
// Candidates and rows cross the boundary as plain dicts, so that pickle (and so any
// concurrent.futures executor, a process pool, dask or Ray) carries them; a dict converts back to the
// same C++ struct bit for bit (Python floats are doubles), so the report equals `megasim sweep`'s.
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bindings/init.h"
#include "scenarios/api.h"
#include "scenarios/studies/topology_cache.h"

namespace py = pybind11;

namespace megasim::bindings {
namespace {

using scenarios::SweepCandidate;
using scenarios::SweepRow;
using scenarios::SweepStatus;

// The CLI's sweep_options: each spec parsed by parse_sweep_axis (ConfigError → ValueError naming the
// key), in the order given.
scenarios::SweepOptions sweep_options(const std::vector<std::string>& vary, std::int64_t max_micro_batch_size,
                                      std::size_t confirm_top = scenarios::SweepOptions::kDefaultConfirmTop) {
  scenarios::SweepOptions options;
  options.max_micro_batch_size = max_micro_batch_size;
  options.confirm_top = confirm_top;
  for (const std::string& spec : vary) options.vary.push_back(scenarios::parse_sweep_axis(spec));
  return options;
}

SweepStatus parse_status(const std::string& text) {
  for (const SweepStatus s :
       {SweepStatus::kSimulated, SweepStatus::kScreened, SweepStatus::kOutOfMemory, SweepStatus::kInvalid}) {
    if (scenarios::to_string(s) == text) return s;
  }
  throw py::value_error("sweep candidate: unknown status " + text);
}

// Every field of SweepCandidate, plus "estimated_cost" (read only: the order to submit work in).
py::dict to_dict(const SweepCandidate& c) {
  py::dict d;
  d["point"] = c.point;
  d["point_values"] = c.point_values;
  d["tp"] = c.tp;
  d["pp"] = c.pp;
  d["layers_per_virtual_stage"] = c.layers_per_virtual_stage;
  d["micro_batch_size"] = c.micro_batch_size;
  d["overrides"] = c.overrides;
  d["gpus"] = c.gpus;
  d["dp"] = c.dp;
  d["virtual_stages"] = c.virtual_stages;
  d["num_microbatches"] = c.num_microbatches;
  d["peak_memory_bytes"] = c.peak_memory_bytes;
  d["peak_stage"] = c.peak_stage;
  d["hbm_bytes"] = c.hbm_bytes;
  d["status"] = std::string(scenarios::to_string(c.status));
  d["reason"] = c.reason;
  d["estimated_cost"] = scenarios::estimated_cost(c);
  return d;
}

SweepCandidate candidate_from_dict(const py::dict& d) {
  SweepCandidate c;
  c.point = d["point"].cast<std::size_t>();
  c.point_values = d["point_values"].cast<std::vector<std::string>>();
  c.tp = d["tp"].cast<std::int64_t>();
  c.pp = d["pp"].cast<std::int64_t>();
  c.layers_per_virtual_stage = d["layers_per_virtual_stage"].cast<std::int64_t>();
  c.micro_batch_size = d["micro_batch_size"].cast<std::int64_t>();
  c.overrides = d["overrides"].cast<std::vector<std::string>>();
  c.gpus = d["gpus"].cast<std::int64_t>();
  c.dp = d["dp"].cast<std::int64_t>();
  c.virtual_stages = d["virtual_stages"].cast<std::int64_t>();
  c.num_microbatches = d["num_microbatches"].cast<std::int64_t>();
  c.peak_memory_bytes = d["peak_memory_bytes"].cast<std::int64_t>();
  c.peak_stage = d["peak_stage"].cast<std::int64_t>();
  c.hbm_bytes = d["hbm_bytes"].cast<double>();
  c.status = parse_status(d["status"].cast<std::string>());
  c.reason = d["reason"].cast<std::string>();
  return c;
}

// {"candidate": {...}, "iteration_time_s", "tokens_per_s", "mfu", "hfu", "breakdown": {...},
// "screen_tokens_per_s"}.
py::dict to_dict(const SweepRow& row) {
  const scenarios::RankBreakdown& b = row.breakdown;
  py::dict breakdown;
  breakdown["compute_s"] = b.compute_s;
  breakdown["tp_exposed_s"] = b.tp_exposed_s;
  breakdown["pp_exposed_s"] = b.pp_exposed_s;
  breakdown["dp_exposed_s"] = b.dp_exposed_s;
  breakdown["bubble_s"] = b.bubble_s;
  breakdown["waiting_s"] = b.waiting_s;
  breakdown["total_s"] = b.total_s;
  py::dict d;
  d["candidate"] = to_dict(row.candidate);
  d["iteration_time_s"] = row.iteration_time_s;
  d["tokens_per_s"] = row.tokens_per_s;
  d["mfu"] = row.mfu;
  d["hfu"] = row.hfu;
  d["breakdown"] = breakdown;
  d["screen_tokens_per_s"] = row.screen_tokens_per_s;
  return d;
}

SweepRow row_from_dict(const py::dict& d) {
  SweepRow row;
  row.candidate = candidate_from_dict(d["candidate"].cast<py::dict>());
  row.iteration_time_s = d["iteration_time_s"].cast<double>();
  row.tokens_per_s = d["tokens_per_s"].cast<double>();
  row.mfu = d["mfu"].cast<double>();
  row.hfu = d["hfu"].cast<double>();
  const auto b = d["breakdown"].cast<py::dict>();
  row.breakdown = {.compute_s = b["compute_s"].cast<double>(),
                   .tp_exposed_s = b["tp_exposed_s"].cast<double>(),
                   .pp_exposed_s = b["pp_exposed_s"].cast<double>(),
                   .dp_exposed_s = b["dp_exposed_s"].cast<double>(),
                   .bubble_s = b["bubble_s"].cast<double>(),
                   .waiting_s = b["waiting_s"].cast<double>(),
                   .total_s = b["total_s"].cast<double>()};
  row.screen_tokens_per_s = d["screen_tokens_per_s"].cast<double>();
  return row;
}

// The scenario is copied before the GIL is released: another Python thread may change it meanwhile.
py::list candidates(const scenarios::Scenario& s, const std::vector<std::string>& vary,
                    std::int64_t max_micro_batch_size) {
  const scenarios::Scenario copy = s;
  // As the CLI's sweep: expert and context parallelism searched too (with_searched_parallelism).
  const scenarios::SweepOptions options =
      scenarios::with_searched_parallelism(copy, sweep_options(vary, max_micro_batch_size));
  std::vector<SweepCandidate> out;
  {
    py::gil_scoped_release release;
    out = scenarios::enumerate_sweep(copy, options);
  }
  py::list list;
  for (const SweepCandidate& c : out) list.append(to_dict(c));
  return list;
}

// `evaluate` (evaluate_sweep_candidate or screen_sweep_candidate) with the GIL released.
py::dict evaluate(const scenarios::Scenario& s, const py::dict& candidate,
                  SweepRow (*evaluate)(const scenarios::Scenario&, const SweepCandidate&, scenarios::TopologyCache&)) {
  const scenarios::Scenario copy = s;
  const SweepCandidate c = candidate_from_dict(candidate);
  SweepRow row;
  {
    py::gil_scoped_release release;
    row = evaluate(copy, c, process_topologies());
  }
  return to_dict(row);
}

std::vector<SweepRow> rows_from_list(const py::list& rows) {
  std::vector<SweepRow> parsed;
  parsed.reserve(rows.size());
  for (const py::handle row : rows) parsed.push_back(row_from_dict(row.cast<py::dict>()));
  return parsed;
}

py::list rows_to_list(const std::vector<SweepRow>& rows) {
  py::list out;
  for (const SweepRow& row : rows) out.append(to_dict(row));
  return out;
}

scenarios::SweepReport report(const scenarios::Scenario& s, const std::vector<std::string>& vary,
                              std::int64_t max_micro_batch_size, const py::list& rows, std::size_t confirm_top) {
  std::vector<SweepRow> parsed = rows_from_list(rows);
  const scenarios::SweepOptions options =
      scenarios::with_searched_parallelism(s, sweep_options(vary, max_micro_batch_size, confirm_top));
  py::gil_scoped_release release;
  return scenarios::make_sweep_report(options, std::move(parsed));
}

}  // namespace

void init_sweep(py::module_& m) {
  py::class_<scenarios::SweepReport>(m, "_SweepReport", "A ranked sweep (megasim.sweep reads its CSV)")
      .def("csv", [](const scenarios::SweepReport& r) { return scenarios::to_csv(r); })
      .def(
          "json", [](const scenarios::SweepReport& r, std::size_t top) { return scenarios::to_json(r, top); },
          py::arg("top") = 0)
      .def(
          "text", [](const scenarios::SweepReport& r, std::size_t top) { return scenarios::to_text(r, top); },
          py::arg("top") = 0);
  m.def("_sweep_candidates", &candidates, py::arg("scenario"), py::arg("vary"), py::arg("max_micro_batch_size"),
        "Every candidate of the sweep as a dict, in key order (enumerate_sweep, GIL released); ValueError as the "
        "CLI for a bad vary spec");
  m.def(
      "_evaluate_sweep_candidate",
      [](const scenarios::Scenario& s, const py::dict& c) {
        return evaluate(s, c, &scenarios::evaluate_sweep_candidate);
      },
      py::arg("scenario"), py::arg("candidate"),
      "The row (a dict) of one candidate: simulated in full if accepted (GIL released), else as it is");
  m.def(
      "_screen_sweep_candidate",
      [](const scenarios::Scenario& s, const py::dict& c) {
        return evaluate(s, c, &scenarios::screen_sweep_candidate);
      },
      py::arg("scenario"), py::arg("candidate"),
      "The row (a dict) of one candidate: screened (one replica for all) if accepted (GIL released), else as it is");
  py::class_<scenarios::SweepConfirmation>(m, "_SweepConfirmation",
                                           "Which screened rows to simulate in full (scenarios::SweepConfirmation)")
      .def(py::init([](const py::list& rows, std::size_t confirm_top) {
             if (confirm_top < 1) throw py::value_error("confirm_top: a confirmation certifies at least one plan");
             return scenarios::SweepConfirmation(rows_from_list(rows), confirm_top);
           }),
           py::arg("rows"), py::arg("confirm_top"))
      .def("next", &scenarios::SweepConfirmation::next, "The next row index to simulate in full, or None")
      .def(
          "record",
          [](scenarios::SweepConfirmation& c, std::size_t index, const py::dict& row) {
            c.record(index, row_from_dict(row));
          },
          py::arg("index"), py::arg("row"))
      .def("remaining", &scenarios::SweepConfirmation::remaining)
      .def("rows", [](const scenarios::SweepConfirmation& c) { return rows_to_list(c.rows()); });
  m.def("_sweep_report", &report, py::arg("scenario"), py::arg("vary"), py::arg("max_micro_batch_size"),
        py::arg("rows"), py::arg("confirm_top"),
        "Ranks one row per candidate of the scenario's sweep, given in any order (make_sweep_report)");
}

}  // namespace megasim::bindings
