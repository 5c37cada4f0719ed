#include "scenarios/explain_study.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>

#include "scenarios/report_json.h"
#include "scenarios/run_study.h"
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

// u_k of the header: the mechanism's GPU time per model FLOP at peak, (c_k / T) / MFU.
double time_per_work(const ExplainRun& run, const Mechanism& m) {
  return run.mean.*m.seconds / run.iteration_time_s / run.mfu;
}

void write_run(JsonWriter& w, std::string_view key, const ExplainRun& run) {
  w.key(key).begin_object();
  w.field("name", run.name).field("gpus", run.gpus).field("iteration_time_s", run.iteration_time_s);
  w.field("mfu", run.mfu);
  w.key("breakdown");
  write_breakdown_json(w, run.mean);
  w.end_object();
}

}  // namespace

ExplainReport explain_mfu(const ExplainRun& a, const ExplainRun& b) {
  MEGASIM_ASSERT(a.iteration_time_s > 0 && b.iteration_time_s > 0 && a.mfu > 0 && b.mfu > 0,
                 "explained runs have a positive iteration time and MFU");
  ExplainReport out{.a = a, .b = b, .steps = {}};
  double sum = 0;  // A's terms with the first j replaced by B's
  for (const Mechanism& m : kMechanisms) sum += time_per_work(a, m);
  double mfu = 1 / sum;
  for (const Mechanism& m : kMechanisms) {
    sum += time_per_work(b, m) - time_per_work(a, m);
    const double next = 1 / sum;
    out.steps.push_back({.mechanism = std::string(m.name),
                         .a_share = a.mean.*m.seconds / a.iteration_time_s,
                         .b_share = b.mean.*m.seconds / b.iteration_time_s,
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
          .mean = report.mean};
}

ExplainReport run_explain_study(const Scenario& a, const Scenario& b) {
  RunOptions options;
  options.straggler_whatifs = false;
  const RunResult ra = run_iteration_study(a, options);
  const RunResult rb = run_iteration_study(b, options);
  return explain_mfu(explain_run_of(a, ra.report), explain_run_of(b, rb.report));
}

std::string to_text(const ExplainReport& r) {
  std::string out =
      fmt::format("MFU {:.2f}% ({}, {} GPUs, {:.3f} s) -> {:.2f}% ({}, {} GPUs, {:.3f} s): {:+.2f} points\n",
                  100 * r.a.mfu, r.a.name, r.a.gpus, r.a.iteration_time_s, 100 * r.b.mfu, r.b.name, r.b.gpus,
                  r.b.iteration_time_s, 100 * (r.b.mfu - r.a.mfu));
  out += fmt::format("  {:<11} {:>9} {:>9} {:>12}\n", "mechanism", "A share", "B share", "MFU points");
  for (const ExplainStep& s : r.steps) {
    out += fmt::format("  {:<11} {:>8.2f}% {:>8.2f}% {:>+12.2f}\n", s.mechanism, 100 * s.a_share, 100 * s.b_share,
                       100 * s.mfu_change);
  }
  out +=
      "(share: of the iteration time, mean over ranks; each step replaces A's time per unit of work with B's, in "
      "this order)\n";
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
