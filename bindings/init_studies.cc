#include <pybind11/stl.h>

#include "bindings/init.h"
#include "scenarios/api.h"
#include "topology/summary.h"
#include "topology/topology.h"

namespace py = pybind11;

namespace megasim::bindings {
namespace {

// Each study runs with the GIL released, on a copy of the scenario made before (another Python thread
// may change the original meanwhile), and returns its report as the CLI's JSON text, which the
// Python side parses: one serialisation for CLI and Python, so both give identical numbers.
std::string collective_json(const scenarios::Scenario& s, const std::string& op, const std::string& bytes,
                            const std::string& algo, const std::string& group, std::int64_t gpus) {
  scenarios::Scenario copy = s;
  scenarios::CollectiveRequest request;
  request.op = models::parse_collective_op(op, "op");
  request.algorithm = models::parse_collective_algorithm(algo, "algo");
  request.bytes = scenarios::parse_bytes(bytes, "bytes");
  if (!group.empty()) request.scope = scenarios::parse_group_scope(group, "group");
  if (gpus > 0 && request.scope == scenarios::GroupScope::kSingle) request.group_gpus = gpus;
  scenarios::validate(copy);
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_collective_study(copy, request), false);
}

std::string topology_json(const scenarios::Scenario& s) {
  scenarios::validate(s);
  const topo::ClusterParams cluster = scenarios::effective_cluster(s);
  py::gil_scoped_release release;
  return scenarios::to_json(topo::summarize(topo::Topology::build(cluster)));
}

std::string plan_json(const scenarios::Scenario& s) {
  const scenarios::Scenario copy = s;
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_plan_study(copy));
}

std::string campaign_json(const scenarios::Scenario& s, double days, std::int64_t seeds, bool sweep,
                          const std::vector<double>& intervals_s) {
  const scenarios::CampaignOptions options{
      .days = days, .seeds = seeds, .sweep = sweep, .sweep_intervals_s = intervals_s, .threads = 0};
  const scenarios::Scenario copy = s;
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_campaign_study(copy, options));
}

std::string whatif_json(const std::string& trace_path, std::int64_t slowest) {
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_whatif_study(trace_path, slowest));
}

std::string explain_json(const scenarios::Scenario& a, const scenarios::Scenario& b) {
  const scenarios::Scenario copy_a = a, copy_b = b;
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_explain_study(copy_a, copy_b));
}

std::string calibrate_measured_json(const std::string& csv, const scenarios::Scenario& base,
                                    const std::vector<std::string>& fit, const std::string& predict_csv,
                                    bool leave_one_out) {
  scenarios::MeasuredCalibrationRequest request{csv, base, fit, predict_csv, leave_one_out, 0};
  py::gil_scoped_release release;
  return scenarios::to_json(scenarios::run_measured_calibration(request));
}

}  // namespace

void init_studies(py::module_& m) {
  m.def("_plan_json", &plan_json, py::arg("scenario"));
  m.def("_collective_json", &collective_json, py::arg("scenario"), py::arg("op"), py::arg("bytes"), py::arg("algo"),
        py::arg("group"), py::arg("gpus"));
  m.def("_topology_json", &topology_json, py::arg("scenario"));
  m.def("_campaign_json", &campaign_json, py::arg("scenario"), py::arg("days"), py::arg("seeds"), py::arg("sweep"),
        py::arg("intervals_s"));
  m.def("_whatif_json", &whatif_json, py::arg("trace_path"), py::arg("slowest"));
  m.def("_explain_json", &explain_json, py::arg("a"), py::arg("b"));
  m.def("_calibrate_measured_json", &calibrate_measured_json, py::arg("csv"), py::arg("scenario"), py::arg("fit"),
        py::arg("predict"), py::arg("leave_one_out"));
}

}  // namespace megasim::bindings
