// The campaign study's phases (scenarios/studies/campaign/campaign_phases.h) for
// python/megasim/campaigns.py, which runs them as tasks on an executor. Every value crosses as plain
// dicts, lists and numbers (Python floats are doubles), so that any executor pickles them and the
// merged report is the single process's to the byte.
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings/init.h"
#include "scenarios/api.h"

namespace py = pybind11;

namespace megasim::bindings {
namespace {

using scenarios::CampaignOptions;
using scenarios::CampaignReach;
using scenarios::CampaignSeeds;
using scenarios::CampaignSimulation;
using scenarios::FabricDamage;
using scenarios::SeedOutcome;
using scenarios::SimulatedIteration;

CampaignOptions options_of(double days, std::int64_t seeds, bool sweep, const std::vector<double>& intervals_s) {
  return {.days = days, .seeds = seeds, .sweep = sweep, .sweep_intervals_s = intervals_s, .threads = 1};
}

FabricDamage damage_from(const py::handle& failed) {
  FabricDamage d;
  d.failed = failed.cast<std::array<std::int32_t, 4>>();
  return d;
}

py::dict to_dict(const CampaignSimulation& s) {
  py::dict d;
  d["failed"] = s.damage.failed;
  d["drift_knot"] = s.drift_knot;
  return d;
}

CampaignSimulation simulation_from(const py::dict& d) {
  return {damage_from(d["failed"]), d["drift_knot"].cast<std::int32_t>()};
}

py::dict to_dict(const SimulatedIteration& t) {
  py::dict d = to_dict(t.simulation);
  d["iteration_time_s"] = t.iteration_time_s;
  return d;
}

std::vector<SimulatedIteration> times_from(const py::list& list) {
  std::vector<SimulatedIteration> out;
  for (const py::handle& item : list) {
    const py::dict d = item.cast<py::dict>();
    out.push_back({simulation_from(d), d["iteration_time_s"].cast<double>()});
  }
  return out;
}

py::list to_list(const std::vector<SimulatedIteration>& times) {
  py::list out;
  for (const SimulatedIteration& t : times) out.append(to_dict(t));
  return out;
}

py::dict to_dict(const CampaignReach& r) {
  py::list damaged;
  for (const FabricDamage& d : r.damaged) damaged.append(py::cast(d.failed));
  py::dict d;
  d["damaged"] = damaged;
  d["max_uptime_s"] = r.max_uptime_s;
  return d;
}

CampaignReach reach_from(const py::dict& d) {
  CampaignReach r;
  for (const py::handle& failed : d["damaged"].cast<py::list>()) r.damaged.push_back(damage_from(failed));
  r.max_uptime_s = d["max_uptime_s"].cast<double>();
  return r;
}

py::dict to_dict(const SeedOutcome& o) {
  py::dict d;
  d["ettr"] = o.ettr;
  d["productive_s"] = o.productive_s;
  d["lost_s"] = o.lost_s;
  d["failures"] = o.failures;
  d["flaps"] = o.flaps;
  d["job_failures"] = o.job_failures;
  d["checkpoints"] = o.checkpoints;
  d["iterations"] = o.iterations;
  return d;
}

SeedOutcome outcome_from(const py::dict& d) {
  SeedOutcome o;
  o.ettr = d["ettr"].cast<double>();
  o.productive_s = d["productive_s"].cast<double>();
  o.lost_s = d["lost_s"].cast<decltype(o.lost_s)>();
  o.failures = d["failures"].cast<decltype(o.failures)>();
  o.flaps = d["flaps"].cast<std::int64_t>();
  o.job_failures = d["job_failures"].cast<std::int64_t>();
  o.checkpoints = d["checkpoints"].cast<std::int64_t>();
  o.iterations = d["iterations"].cast<double>();
  return o;
}

py::dict to_dict(const CampaignSeeds& s) {
  py::list outcomes;
  for (const SeedOutcome& o : s.outcomes) outcomes.append(to_dict(o));
  py::dict d;
  d["first"] = s.first;
  d["outcomes"] = outcomes;
  d["sweep_ettr"] = s.sweep_ettr;
  d["extra"] = to_list(s.extra);
  return d;
}

CampaignSeeds seeds_from(const py::dict& d) {
  CampaignSeeds s;
  s.first = d["first"].cast<std::int64_t>();
  for (const py::handle& o : d["outcomes"].cast<py::list>()) s.outcomes.push_back(outcome_from(o.cast<py::dict>()));
  s.sweep_ettr = d["sweep_ettr"].cast<std::vector<std::vector<double>>>();
  s.extra = times_from(d["extra"].cast<py::list>());
  return s;
}

// Each phase runs with the GIL released on a copy of the scenario, its inputs converted before.
py::dict reach(const scenarios::Scenario& s, double days, std::int64_t seeds, bool sweep,
               const std::vector<double>& intervals_s, std::int64_t first, std::int64_t count) {
  const scenarios::Scenario copy = s;
  CampaignReach r;
  {
    py::gil_scoped_release release;
    r = scenarios::reach_campaign_states(copy, options_of(days, seeds, sweep, intervals_s), first, count,
                                         process_topologies());
  }
  return to_dict(r);
}

py::list simulations(const scenarios::Scenario& s, double days, std::int64_t seeds, bool sweep,
                     const std::vector<double>& intervals_s, const py::list& reaches) {
  const scenarios::Scenario copy = s;
  std::vector<CampaignReach> in;
  for (const py::handle& r : reaches) in.push_back(reach_from(r.cast<py::dict>()));
  std::vector<CampaignSimulation> out;
  {
    py::gil_scoped_release release;
    out = scenarios::campaign_simulations(copy, options_of(days, seeds, sweep, intervals_s), in, process_topologies());
  }
  py::list list;
  for (const CampaignSimulation& c : out) list.append(to_dict(c));
  return list;
}

double simulate(const scenarios::Scenario& s, const py::dict& simulation) {
  const scenarios::Scenario copy = s;
  const CampaignSimulation c = simulation_from(simulation);
  py::gil_scoped_release release;
  return scenarios::simulate_campaign_state(copy, c, process_topologies());
}

py::dict seeds(const scenarios::Scenario& s, double days, std::int64_t seeds, bool sweep,
               const std::vector<double>& intervals_s, const py::list& times, std::int64_t first, std::int64_t count) {
  const scenarios::Scenario copy = s;
  const std::vector<SimulatedIteration> in = times_from(times);
  CampaignSeeds out;
  {
    py::gil_scoped_release release;
    out = scenarios::run_campaign_seeds(copy, options_of(days, seeds, sweep, intervals_s), in, first, count,
                                        process_topologies());
  }
  return to_dict(out);
}

std::string merge_json(const scenarios::Scenario& s, double days, std::int64_t seeds, bool sweep,
                       const std::vector<double>& intervals_s, const py::list& times, const py::list& ranges) {
  const scenarios::Scenario copy = s;
  const std::vector<SimulatedIteration> in = times_from(times);
  std::vector<CampaignSeeds> parts;
  for (const py::handle& r : ranges) parts.push_back(seeds_from(r.cast<py::dict>()));
  py::gil_scoped_release release;
  return scenarios::to_json(
      scenarios::merge_campaign(copy, options_of(days, seeds, sweep, intervals_s), in, parts, process_topologies()));
}

}  // namespace

void init_campaign(py::module_& m) {
  m.def("_campaign_reach", &reach, py::arg("scenario"), py::arg("days"), py::arg("seeds"), py::arg("sweep"),
        py::arg("intervals_s"), py::arg("first"), py::arg("count"));
  m.def("_campaign_simulations", &simulations, py::arg("scenario"), py::arg("days"), py::arg("seeds"), py::arg("sweep"),
        py::arg("intervals_s"), py::arg("reaches"));
  m.def("_campaign_simulate", &simulate, py::arg("scenario"), py::arg("simulation"));
  m.def("_campaign_seeds", &seeds, py::arg("scenario"), py::arg("days"), py::arg("seeds"), py::arg("sweep"),
        py::arg("intervals_s"), py::arg("times"), py::arg("first"), py::arg("count"));
  m.def("_campaign_merge_json", &merge_json, py::arg("scenario"), py::arg("days"), py::arg("seeds"), py::arg("sweep"),
        py::arg("intervals_s"), py::arg("times"), py::arg("ranges"));
}

}  // namespace megasim::bindings
