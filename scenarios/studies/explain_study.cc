#include "scenarios/studies/explain_study.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "scenarios/config/device.h"
#include "scenarios/report/report_json.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

struct Mechanism {
  std::string_view name;
  double RankBreakdown::*seconds;
};

constexpr std::array<Mechanism, 6> kMechanisms{{{"compute", &RankBreakdown::compute_s},
                                                {"tp_exposed", &RankBreakdown::tp_exposed_s},
                                                {"pp_exposed", &RankBreakdown::pp_exposed_s},
                                                {"dp_exposed", &RankBreakdown::dp_exposed_s},
                                                {"bubble", &RankBreakdown::bubble_s},
                                                {"waiting", &RankBreakdown::waiting_s}}};

// The waterfall's terms of a run, in order: the categories of its ideal breakdown (of its own
// when it has none), then its added mechanisms. In seconds; they sum to its iteration time.
std::vector<std::pair<std::string, double>> terms(const ExplainRun& run) {
  const RankBreakdown& split = run.ideal ? *run.ideal : run.mean;
  std::vector<std::pair<std::string, double>> out;
  for (const Mechanism& m : kMechanisms) out.emplace_back(std::string(m.name), split.*m.seconds);
  for (const MechanismCost& c : run.added) out.emplace_back(c.mechanism, c.seconds);
  return out;
}

// One way of simulating a run without a production mechanism, and whether the run has it at all.
struct Counterfactual {
  std::string_view mechanism;
  std::function<bool(const Scenario&, const DeviceModel&)> applies;
  std::function<void(Scenario&)> edit_scenario;
  std::function<void(DeviceModel&)> edit_device;
};

const std::array<Counterfactual, 3>& counterfactuals() {
  static const std::array<Counterfactual, 3> kAll{{
      {"stragglers",
       [](const Scenario& s, const DeviceModel&) { return s.stragglers.active(); },
       [](Scenario& s) { s.stragglers.enabled = false; },
       {}},
      {"collisions",
       [](const Scenario& s, const DeviceModel&) { return s.fabric.routing == backend::Routing::kEcmp; },
       [](Scenario& s) { s.fabric.routing = backend::Routing::kAdaptive; },
       {}},
      {"host_overheads",
       [](const Scenario&, const DeviceModel& d) {
         return d.compute.launch_overhead_ns > 0 || d.compute.host_sync_gap_ns > 0 || d.compute.get_batch_host_ns > 0;
       },
       {},
       [](DeviceModel& d) {
         d.compute.launch_overhead_ns = 0;
         d.compute.host_sync_gap_ns = 0;
         d.compute.get_batch_host_ns = 0;
       }},
  }};
  return kAll;
}

// The run's iteration without the counterfactuals `off` (all of them at once).
RunResult run_without(const Scenario& scenario, const std::vector<const Counterfactual*>& off) {
  Scenario edited = scenario;
  std::vector<std::function<void(DeviceModel&)>> device_edits;
  for (const Counterfactual* c : off) {
    if (c->edit_scenario) c->edit_scenario(edited);
    if (c->edit_device) device_edits.push_back(c->edit_device);
  }
  RunOptions options;
  options.straggler_whatifs = false;
  if (!device_edits.empty()) {
    options.adjust_device = [device_edits](DeviceModel& d) {
      for (const auto& edit : device_edits) edit(d);
    };
  }
  return run_iteration_study(edited, options);
}

// The run with its counterfactuals: each mechanism that applies simulated away alone, then all of
// them together (reusing the single run when only one applies).
ExplainRun explained_run(const Scenario& scenario) {
  const RunResult full = run_without(scenario, {});
  ExplainRun run = explain_run_of(scenario, full.report);
  const DeviceModel device = device_model(scenario);
  std::vector<const Counterfactual*> applicable;
  double alone_sum = 0;
  RankBreakdown last_alone = full.report.mean;
  double last_alone_s = full.report.iteration_time_s;
  for (const Counterfactual& c : counterfactuals()) {
    double seconds = 0;
    if (c.applies(scenario, device)) {
      applicable.push_back(&c);
      const RunResult without = run_without(scenario, {&c});
      seconds = run.iteration_time_s - without.report.iteration_time_s;
      last_alone = without.report.mean;
      last_alone_s = without.report.iteration_time_s;
    }
    alone_sum += seconds;
    run.added.push_back({.mechanism = std::string(c.mechanism), .seconds = seconds});
  }
  double ideal_s = last_alone_s;
  run.ideal = last_alone;
  if (applicable.size() > 1) {
    const RunResult ideal = run_without(scenario, applicable);
    ideal_s = ideal.report.iteration_time_s;
    run.ideal = ideal.report.mean;
  }
  run.added.push_back({.mechanism = "interaction", .seconds = run.iteration_time_s - ideal_s - alone_sum});
  return run;
}

void write_run(JsonWriter& w, std::string_view key, const ExplainRun& run) {
  w.key(key).begin_object();
  w.field("name", run.name).field("gpus", run.gpus).field("iteration_time_s", run.iteration_time_s);
  w.field("mfu", run.mfu);
  w.key("breakdown");
  write_breakdown_json(w, run.mean);
  if (run.ideal) {
    w.key("ideal_breakdown");
    write_breakdown_json(w, *run.ideal);
    w.key("added_s").begin_object();
    for (const MechanismCost& c : run.added) w.field(c.mechanism, c.seconds);
    w.end_object();
  }
  w.end_object();
}

}  // namespace

ExplainReport explain_mfu(const ExplainRun& a, const ExplainRun& b) {
  MEGASIM_ASSERT(a.iteration_time_s > 0 && b.iteration_time_s > 0 && a.mfu > 0 && b.mfu > 0,
                 "explained runs have a positive iteration time and MFU");
  const auto a_terms = terms(a);
  const auto b_terms = terms(b);
  MEGASIM_ASSERT(a.ideal.has_value() == b.ideal.has_value() && a_terms.size() == b_terms.size(),
                 "explained runs have the same terms");
  ExplainReport out{.a = a, .b = b, .steps = {}};
  // u of the header for each term: its GPU time per model FLOP at peak, (c / T) / MFU.
  const auto per_work = [](const ExplainRun& run, double seconds) { return seconds / run.iteration_time_s / run.mfu; };
  double sum = 0;  // A's terms with the first j replaced by B's
  for (const auto& [name, seconds] : a_terms) sum += per_work(a, seconds);
  double mfu = 1 / sum;
  for (std::size_t i = 0; i < a_terms.size(); ++i) {
    MEGASIM_ASSERT(a_terms[i].first == b_terms[i].first, "explained runs have the same terms");
    sum += per_work(b, b_terms[i].second) - per_work(a, a_terms[i].second);
    const double next = 1 / sum;
    out.steps.push_back({.mechanism = a_terms[i].first,
                         .a_share = a_terms[i].second / a.iteration_time_s,
                         .b_share = b_terms[i].second / b.iteration_time_s,
                         .mfu_change = next - mfu});
    mfu = next;
  }
  return out;
}

ExplainRun explain_run_of(const Scenario& scenario, const IterationReport& report) {
  return {.name = scenario.name,
          .gpus = report.plan.world_size,
          .iteration_time_s = report.iteration_time_s,
          .mfu = report.mfu,
          .mean = report.mean,
          .ideal = std::nullopt,
          .added = {}};
}

ExplainReport run_explain_study(const Scenario& a, const Scenario& b) {
  return explain_mfu(explained_run(a), explained_run(b));
}

std::string to_text(const ExplainReport& r) {
  std::string out =
      fmt::format("MFU {:.2f}% ({}, {} GPUs, {:.3f} s) -> {:.2f}% ({}, {} GPUs, {:.3f} s): {:+.2f} points\n",
                  100 * r.a.mfu, r.a.name, r.a.gpus, r.a.iteration_time_s, 100 * r.b.mfu, r.b.name, r.b.gpus,
                  r.b.iteration_time_s, 100 * (r.b.mfu - r.a.mfu));
  out += fmt::format("  {:<14} {:>9} {:>9} {:>12}\n", "mechanism", "A share", "B share", "MFU points");
  for (const ExplainStep& s : r.steps) {
    out += fmt::format("  {:<14} {:>8.2f}% {:>8.2f}% {:>+12.2f}\n", s.mechanism, 100 * s.a_share, 100 * s.b_share,
                       100 * s.mfu_change);
  }
  out +=
      "(share: of the iteration time, mean over ranks; each step replaces A's time per unit of work with B's, in "
      "this order";
  if (r.a.ideal) {
    out +=
        "; compute .. waiting split the run with stragglers, collisions and host overheads off, each of those is the "
        "time the run loses to it, measured by simulating the run without it";
  }
  out += ")\n";
  return out;
}

std::string to_json(const ExplainReport& r) {
  JsonWriter w;
  w.begin_object();
  write_run(w, "a", r.a);
  write_run(w, "b", r.b);
  w.field("mfu_change", r.b.mfu - r.a.mfu);
  w.key("steps").begin_array();
  for (const ExplainStep& s : r.steps) {
    w.begin_object();
    w.field("mechanism", s.mechanism).field("a_share", s.a_share).field("b_share", s.b_share);
    w.field("mfu_change", s.mfu_change);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
