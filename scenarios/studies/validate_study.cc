#include "scenarios/studies/validate_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

// Below this, both sides are noise (a data-loading task with nothing to load): no error is reported.
constexpr double kNegligibleS = 1e-4;

ValidationRow row(std::string name, double predicted, double measured) {
  const bool negligible = predicted < kNegligibleS && measured < kNegligibleS;
  const double error = negligible || measured <= 0 ? 0 : (predicted - measured) / measured * 100;
  return {std::move(name), predicted, measured, error};
}

// Per rank: seconds in tasks of each category, busy compute seconds, last end.
struct RankTimes {
  std::int64_t stage = 0;
  std::int64_t replica = 0;
  std::map<models::TaskCategory, double> by_category;
  double compute = 0;
  double end = 0;
};

std::map<std::int64_t, RankTimes> rank_times(const models::Workload& workload, const backend::Trace& trace) {
  std::map<std::int64_t, RankTimes> out;
  for (const backend::TraceUnit& unit : trace.units) {
    const auto& tasks = workload.stages.at(static_cast<std::size_t>(unit.stage)).tasks;
    MEGASIM_ASSERT(tasks.size() == unit.records.size(), "a unit's records do not match its stage program");
    RankTimes t;
    t.stage = unit.stage;
    t.replica = unit.replica;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const backend::TaskRecord& r = unit.records[i];
      const double seconds = sim::to_seconds(r.end - r.start);
      t.by_category[tasks[i].category] += seconds;
      if (tasks[i].kind == models::TaskKind::kCompute) t.compute += seconds;
      t.end = std::max(t.end, sim::to_seconds(r.end));
    }
    for (const std::int64_t rank : unit.ranks) out[rank] = t;
  }
  return out;
}

void write_row(JsonWriter& j, const ValidationRow& r) {
  j.begin_object()
      .field("predicted_s", r.predicted_s)
      .field("measured_s", r.measured_s)
      .field("error_percent", r.error_percent)
      .end_object();
}

}  // namespace

std::size_t median_iteration(const std::vector<backend::Trace>& traces) {
  MEGASIM_ASSERT(!traces.empty(), "no iteration to take the median of");
  std::vector<std::size_t> order(traces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return traces[a].iteration_time < traces[b].iteration_time; });
  return order[order.size() / 2];
}

ValidationReport compare(const models::Workload& workload, const backend::Trace& predicted,
                         const std::vector<backend::Trace>& measured, const std::string& scenario) {
  MEGASIM_ASSERT(!measured.empty(), "no measured iteration to compare");
  ValidationReport r;
  r.scenario = scenario;
  r.backend = measured.front().backend;
  for (const backend::Trace& t : measured) r.measured_iterations.push_back(sim::to_seconds(t.iteration_time));
  r.median_iteration = median_iteration(measured);
  const backend::Trace& m = measured[r.median_iteration];
  r.iteration = row("iteration", sim::to_seconds(predicted.iteration_time), sim::to_seconds(m.iteration_time));

  const std::map<std::int64_t, RankTimes> p_ranks = rank_times(workload, predicted);
  const std::map<std::int64_t, RankTimes> m_ranks = rank_times(workload, m);
  std::map<models::TaskCategory, std::pair<double, double>> categories;  // predicted, measured sums
  for (const auto& [rank, p] : p_ranks) {
    const auto it = m_ranks.find(rank);
    MEGASIM_ASSERT(it != m_ranks.end(), "a rank of the prediction was not measured");
    const RankTimes& q = it->second;
    for (const auto& [category, seconds] : p.by_category) categories[category].first += seconds;
    for (const auto& [category, seconds] : q.by_category) categories[category].second += seconds;
    r.per_rank.push_back({rank, p.stage, p.replica, row("compute", p.compute, q.compute), row("end", p.end, q.end)});
  }
  const auto ranks = static_cast<double>(p_ranks.size());
  for (const auto& [category, sums] : categories) {
    r.per_op.push_back(row(std::string(models::to_string(category)), sums.first / ranks, sums.second / ranks));
  }
  return r;
}

namespace {

// The trace's units holding `rank`, as units of that rank alone, with every task that is not a
// compute task made zero-length (at its start).
backend::Trace compute_of_rank(const models::Workload& workload, const backend::Trace& trace, std::int64_t rank) {
  backend::Trace out;
  out.backend = trace.backend;
  for (const backend::TraceUnit& unit : trace.units) {
    if (std::find(unit.ranks.begin(), unit.ranks.end(), rank) == unit.ranks.end()) continue;
    backend::TraceUnit u = unit;
    u.ranks = {rank};
    const auto& tasks = workload.stages.at(static_cast<std::size_t>(u.stage)).tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      backend::TaskRecord& r = u.records.at(i);
      if (tasks[i].kind != models::TaskKind::kCompute) r.transfer_start = r.end = r.start;
      out.iteration_time = std::max(out.iteration_time, r.end);
    }
    out.units.push_back(std::move(u));
  }
  return out;
}

// The categories of compute tasks (the rest are communication).
bool is_compute_category(const std::string& name) {
  for (const models::TaskCategory c : {models::TaskCategory::kForward, models::TaskCategory::kBackward,
                                       models::TaskCategory::kOptimizer, models::TaskCategory::kDataLoading}) {
    if (name == models::to_string(c)) return true;
  }
  return false;
}

}  // namespace

ValidationReport compare_compute(const models::Workload& workload, const backend::Trace& predicted,
                                 const std::vector<backend::Trace>& measured, const std::string& scenario) {
  MEGASIM_ASSERT(!measured.empty() && measured.front().units.size() == 1, "a shard measures one rank");
  const std::int64_t rank = measured.front().units.front().ranks.front();
  std::vector<backend::Trace> m;
  for (const backend::Trace& t : measured) m.push_back(compute_of_rank(workload, t, rank));
  const backend::Trace p = compute_of_rank(workload, predicted, rank);
  MEGASIM_ASSERT(p.units.size() == 1, "the measured rank is not in the prediction");
  ValidationReport r = compare(workload, p, m, scenario);
  std::erase_if(r.per_op, [](const ValidationRow& row) { return !is_compute_category(row.name); });
  r.iteration = r.per_rank.front().compute;
  r.iteration.name = "compute";
  return r;
}

ValidationVerdict judge(const ValidationReport& report, double bound_percent) {
  return judge(report.iteration.error_percent, report.measured_iterations, report.predicted_iterations, bound_percent);
}

namespace {

std::string seconds_list(const std::vector<double>& values) {
  std::string out;
  for (const double t : values) out += fmt::format("{}{:.4f}", out.empty() ? "" : ", ", t);
  return out;
}

std::string verdict_text(const ValidationVerdict& v, std::size_t rounds) {
  std::string spreads =
      fmt::format("the IQR of {} measured iterations {:.1f}%", v.measured_count, v.measured_spread_percent);
  if (rounds > 0) spreads += fmt::format(", of {} rounds' predictions {:.1f}%", rounds, v.predicted_spread_percent);
  if (v.measured_count < kMinIterationsForSpread) {
    return fmt::format(
        "verdict: inconclusive: {} measured {} no timing spread ({} or more do), so the error of "
        "{:+.1f}% cannot be held against the {:g}% bound\n",
        v.measured_count, v.measured_count == 1 ? "iteration gives" : "iterations give", kMinIterationsForSpread,
        v.error_percent, v.bound_percent);
  }
  if (v.verdict == Verdict::kInconclusive && v.uncertainty_percent <= v.bound_percent) {
    return fmt::format(
        "verdict: inconclusive: the error of {:+.1f}% passes the {:g}% bound by less than its uncertainty of "
        "+-{:.1f}% (95%; {}); validate again on a quieter machine or with more iterations\n",
        v.error_percent, v.bound_percent, v.uncertainty_percent, spreads);
  }
  if (v.verdict == Verdict::kInconclusive) {
    return fmt::format(
        "verdict: inconclusive: the machine's timing spread leaves the error of {:+.1f}% uncertain by +-{:.1f}% "
        "(95%), more than the {:g}% bound ({}); validate again on a quieter machine\n",
        v.error_percent, v.uncertainty_percent, v.bound_percent, spreads);
  }
  return fmt::format("verdict: {} the {:g}% bound: error {:+.1f}% +- {:.1f}% (95%; {})\n", to_string(v.verdict),
                     v.bound_percent, v.error_percent, v.uncertainty_percent, spreads);
}

}  // namespace

std::string to_text(const ValidationReport& r) {
  std::string out =
      fmt::format("validate '{}' on the {} backend: {} ({} s), the median compared\n", r.scenario, r.backend,
                  counted(r.measured_iterations.size(), "measured iteration"), seconds_list(r.measured_iterations));
  if (r.calibration == "interleaved") {
    out += fmt::format(
        "calibration: measured in {} rounds, one before each measured iteration; their predictions ({} s), "
        "the median compared\n",
        r.predicted_iterations.size(), seconds_list(r.predicted_iterations));
  }
  out += fmt::format("iteration: predicted {:.4f} s, measured {:.4f} s, error {:+.1f}%\n", r.iteration.predicted_s,
                     r.iteration.measured_s, r.iteration.error_percent);
  if (r.verdict) out += verdict_text(*r.verdict, r.predicted_iterations.size());
  out += fmt::format(
      "per op type (seconds per iteration per rank, averaged over ranks)\n"
      "  {:<20} {:>10} {:>10} {:>8}\n",
      "type", "predicted", "measured", "error");
  for (const ValidationRow& op : r.per_op) {
    out += fmt::format("  {:<20} {:>10.4f} {:>10.4f} {:>+7.1f}%\n", op.name, op.predicted_s, op.measured_s,
                       op.error_percent);
  }
  out += fmt::format("per rank\n  {:>4} {:>5} {:>7} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}\n", "rank", "stage",
                     "replica", "compute p", "compute m", "error", "end p", "end m", "error");
  for (const RankValidation& k : r.per_rank) {
    out += fmt::format("  {:>4} {:>5} {:>7} {:>10.4f} {:>10.4f} {:>+7.1f}% {:>10.4f} {:>10.4f} {:>+7.1f}%\n", k.rank,
                       k.stage, k.replica, k.compute.predicted_s, k.compute.measured_s, k.compute.error_percent,
                       k.end.predicted_s, k.end.measured_s, k.end.error_percent);
  }
  return out;
}

std::string to_json(const ValidationReport& r) {
  JsonWriter j;
  j.begin_object()
      .field("scenario", r.scenario)
      .field("backend", r.backend)
      .field("predicted_iteration_time_s", r.iteration.predicted_s)
      .field("measured_iteration_time_s", r.iteration.measured_s)
      .field("error_percent", r.iteration.error_percent);
  j.key("measured_iterations_s").begin_array();
  for (const double t : r.measured_iterations) j.value(t);
  j.end_array();
  j.field("calibration", r.calibration);
  j.key("predicted_iterations_s").begin_array();
  for (const double t : r.predicted_iterations) j.value(t);
  j.end_array();
  if (!r.predicted_iterations.empty()) j.field("median_prediction", static_cast<std::int64_t>(r.median_prediction));
  if (r.verdict) {
    const ValidationVerdict& v = *r.verdict;
    j.field("verdict", std::string(to_string(v.verdict)))
        .field("bound_percent", v.bound_percent)
        .field("uncertainty_percent", v.uncertainty_percent)
        .field("measured_spread_percent", v.measured_spread_percent)
        .field("predicted_spread_percent", v.predicted_spread_percent);
  }
  j.key("per_op").begin_object();
  for (const ValidationRow& op : r.per_op) {
    j.key(op.name);
    write_row(j, op);
  }
  j.end_object();
  j.key("per_rank").begin_array();
  for (const RankValidation& k : r.per_rank) {
    j.begin_object().field("rank", k.rank).field("stage", k.stage).field("replica", k.replica);
    j.key("compute");
    write_row(j, k.compute);
    j.key("end");
    write_row(j, k.end);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace megasim::scenarios
