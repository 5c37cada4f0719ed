// One simulated iteration kept alive for Python: the report, and the Perfetto trace rendered on
// demand (a large run's trace is big; most callers want only the report).
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bindings/init.h"
#include "scenarios/api.h"
#include "scenarios/studies/samples_study.h"
#include "scenarios/trace/run_outputs.h"
#include "sim/error.h"

namespace py = pybind11;

namespace megasim::bindings {
namespace {

// The scenario a run was made from (embedded in its trace so `whatif` can rebuild the workload)
// and what run_iteration_study returned. Immutable once built.
struct Run {
  scenarios::Scenario scenario;
  scenarios::RunResult result;
};

// The scenario is copied before the GIL is released: another Python thread may change it meanwhile.
// samples > 1: the report also holds the spread over that many samples (`run --samples N`).
Run run(const scenarios::Scenario& s, std::int64_t samples) {
  Run r{.scenario = s, .result = {}};
  py::gil_scoped_release release;
  r.result = scenarios::run_iteration_study(r.scenario);
  if (samples != 1) r.result.report.samples = scenarios::run_samples_study(r.scenario, samples, r.result);
  return r;
}

// `megasim run --out` writes the same text into trace.json for the same filter.
std::string trace_json(const Run& r, const std::vector<std::int64_t>& ranks, std::int64_t max_ranks) {
  const scenarios::TraceFilter filter{.ranks = ranks, .max_ranks = max_ranks};
  py::gil_scoped_release release;
  return scenarios::perfetto_trace_json(r.result.workload, r.result.trace, filter, &r.scenario);
}

// `megasim run --out DIR`'s three files, all or none (scenarios/trace/run_outputs.h); the traces
// streamed.
std::vector<std::string> save(const Run& r, const std::string& directory, const std::vector<std::int64_t>& ranks,
                              std::int64_t max_ranks) {
  const scenarios::TraceFilter filter{.ranks = ranks, .max_ranks = max_ranks};
  const std::string report = scenarios::to_json(r.result.report);
  py::gil_scoped_release release;
  return scenarios::write_run_outputs(directory, "directory", report, r.result.workload, r.result.trace, filter,
                                      r.scenario);
}

// The what-ifs of the in-memory trace (every rank), as `megasim whatif` analyses a written one.
std::string whatif_json(const Run& r, std::int64_t slowest) {
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::analyse_trace(r.result.workload, r.result.trace, slowest));
}

}  // namespace

void init_run(py::module_& m) {
  py::class_<Run>(m, "_Run", "One simulated iteration: its report and trace (megasim.RunReport wraps it)")
      .def("report_json", [](const Run& r) { return scenarios::to_json(r.result.report); })
      .def("trace_json", &trace_json, py::arg("ranks"), py::arg("max_ranks"))
      .def("whatif_json", &whatif_json, py::arg("slowest"))
      .def("save", &save, py::arg("directory"), py::arg("ranks"), py::arg("max_ranks"))
      .def_property_readonly("wall_time_s", [](const Run& r) { return r.result.wall_time_s; });
  m.def("_run", &run, py::arg("scenario"), py::arg("samples") = 1,
        "Simulates one iteration (GIL released), and samples - 1 more with other seeds; throws ValueError as the CLI");
}

}  // namespace megasim::bindings
