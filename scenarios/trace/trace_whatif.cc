#include "scenarios/trace/trace_whatif.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/report/iteration_report.h"
#include "scenarios/trace/trace_replay.h"
#include "sim/error.h"
#include "sim/time.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

// The units of each data-parallel group: same stage, same TP rank (-1: a unit holding a TP group).
std::vector<std::vector<std::size_t>> dp_groups(const models::Workload& w, const backend::Trace& trace) {
  const std::int64_t tp = std::max<std::int64_t>(1, w.plan.tp);
  std::map<std::pair<std::int32_t, std::int64_t>, std::vector<std::size_t>> groups;
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    groups[{unit.stage, unit.ranks.size() == 1 ? unit.ranks.front() % tp : -1}].push_back(u);
  }
  std::vector<std::vector<std::size_t>> out;
  for (auto& [key, members] : groups) out.push_back(std::move(members));
  return out;
}

// Every task at the mean of its duration over the unit's group.
ComputeDurations group_means(const ComputeDurations& d, const std::vector<std::vector<std::size_t>>& groups) {
  ComputeDurations out = d;
  for (const std::vector<std::size_t>& members : groups) {
    for (std::size_t i = 0; i < d[members.front()].size(); ++i) {
      double sum = 0;
      for (const std::size_t u : members) sum += static_cast<double>(d[u][i]);
      const auto mean = static_cast<SimTime>(std::llround(sum / static_cast<double>(members.size())));
      for (const std::size_t u : members) out[u][i] = mean;
    }
  }
  return out;
}

SimTime total(const std::vector<SimTime>& d) {
  SimTime sum = 0;
  for (const SimTime t : d) sum += t;
  return sum;
}

// Per unit, its compute sum over its group's mean compute sum (1 for a group without compute).
std::vector<double> slowdowns(const ComputeDurations& d, const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<double> out(d.size(), 1.0);
  for (const std::vector<std::size_t>& members : groups) {
    double mean = 0;
    for (const std::size_t u : members) mean += static_cast<double>(total(d[u]));
    mean /= static_cast<double>(members.size());
    if (mean <= 0) continue;
    for (const std::size_t u : members) out[u] = static_cast<double>(total(d[u])) / mean;
  }
  return out;
}

// The last stage's compute scaled by the mean of the other stages' mean unit compute over its own.
ComputeDurations balanced_last_stage(const models::Workload& w, const backend::Trace& trace, const ComputeDurations& d,
                                     double& ratio) {
  std::vector<double> sum(w.stages.size(), 0);
  std::vector<double> units(w.stages.size(), 0);
  for (std::size_t u = 0; u < d.size(); ++u) {
    const auto s = static_cast<std::size_t>(trace.units[u].stage);
    sum[s] += static_cast<double>(total(d[u]));
    units[s] += 1;
  }
  double others = 0;
  for (std::size_t s = 0; s + 1 < sum.size(); ++s) others += sum[s] / std::max(1.0, units[s]);
  others /= static_cast<double>(sum.size() - 1);
  const double last = sum.back() / std::max(1.0, units.back());
  ratio = last > 0 ? others / last : 1.0;
  ComputeDurations out = d;
  for (std::size_t u = 0; u < d.size(); ++u) {
    if (static_cast<std::size_t>(trace.units[u].stage) + 1 != w.stages.size()) continue;
    for (SimTime& t : out[u]) t = static_cast<SimTime>(std::llround(static_cast<double>(t) * ratio));
  }
  return out;
}

}  // namespace

TraceWhatIfReport analyse_trace(const models::Workload& w, const backend::Trace& trace, std::int64_t slowest) {
  if (slowest < 0) throw sim::ConfigError("whatif.slowest", std::to_string(slowest), "a number of ranks >= 0");
  TraceWhatIfReport report;
  report.backend = trace.backend;
  report.iteration_time_s = sim::to_seconds(trace.iteration_time);
  const ComputeDurations recorded = compute_durations(w, trace);
  const TraceReplay replay(w, trace);  // validates the trace first
  const auto replay_s = [&](const ComputeDurations& d) { return sim::to_seconds(replay.iteration_time(d)); };
  report.replay_time_s = replay_s(recorded);

  const std::vector<std::vector<std::size_t>> groups = dp_groups(w, trace);
  const ComputeDurations mean = group_means(recorded, groups);
  const std::vector<double> slow = slowdowns(recorded, groups);
  std::vector<std::size_t> order(slow.size());
  for (std::size_t u = 0; u < order.size(); ++u) order[u] = u;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return slow[a] > slow[b]; });
  ComputeDurations fixed = recorded;
  std::int64_t replaced = 0;
  for (const std::size_t u : order) {
    if (slow[u] <= 1) break;
    const backend::TraceUnit& unit = trace.units[u];
    if (report.slowest.size() < 8) report.slowest.push_back({unit.ranks, unit.stage, unit.replica, slow[u]});
    if (replaced < slowest) {
      fixed[u] = mean[u];
      ++replaced;
    }
  }

  std::set<std::int64_t> critical;
  for (const TaskRef& ref : critical_chain(w, trace)) {
    for (const std::int64_t r : trace.units[ref.unit].ranks) critical.insert(r);
  }
  report.critical_ranks.assign(critical.begin(), critical.end());

  report.whatifs.push_back({"group_mean_compute",
                            "every rank at the mean compute of its data-parallel peers (same stage and TP rank)",
                            replay_s(mean)});
  report.whatifs.push_back({"fix_slowest_ranks",
                            fmt::format("the {} at their group's mean compute", counted(replaced, "slowest rank")),
                            replay_s(fixed)});
  if (w.stages.size() > 1) {
    double ratio = 1;
    const ComputeDurations balanced = balanced_last_stage(w, trace, recorded, ratio);
    report.whatifs.push_back(
        {"balanced_last_stage",
         fmt::format("the last stage's compute x{:.3f}, the mean of the other stages' (embedding, logits and loss "
                     "spread evenly)",
                     ratio),
         replay_s(balanced)});
  }

  std::map<models::TaskCategory, bool> categories;
  for (const backend::TraceUnit& unit : trace.units) {
    for (const models::Task& t : w.stages[static_cast<std::size_t>(unit.stage)].tasks) {
      if (t.kind == models::TaskKind::kCompute) categories[t.category] = true;
    }
  }
  for (const auto& [category, present] : categories) {
    ComputeDurations d = recorded;
    for (std::size_t u = 0; u < d.size(); ++u) {
      const auto& tasks = w.stages[static_cast<std::size_t>(trace.units[u].stage)].tasks;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (tasks[i].kind == models::TaskKind::kCompute && tasks[i].category == category) d[u][i] = mean[u][i];
      }
    }
    report.slowdown_by_category_s.emplace_back(std::string(models::to_string(category)),
                                               report.replay_time_s - replay_s(d));
  }
  return report;
}

std::string to_text(const TraceWhatIfReport& r) {
  std::string out = fmt::format("trace ({}): iteration {:.4f} s, replayed {:.4f} s\n", r.backend, r.iteration_time_s,
                                r.replay_time_s);
  out += "slowest ranks:";
  for (const RankSlowdown& s : r.slowest) {
    const std::string who = s.ranks.size() > 1 ? fmt::format("ranks {}-{}", s.ranks.front(), s.ranks.back())
                                               : fmt::format("rank {}", s.ranks.front());
    out += fmt::format(" {} (stage {}, replica {}) x{:.3f};", who, s.stage, s.replica, s.slowdown);
  }
  if (r.slowest.empty()) out += " none above their group's mean;";
  out += fmt::format(" {} on the critical path\n", counted(r.critical_ranks.size(), "rank"));
  for (const StragglerWhatIf& w : r.whatifs) {
    out += fmt::format("  what if {:<22} {:.4f} s ({:+.2f}%): {}\n", w.name, w.iteration_time_s,
                       100 * (w.iteration_time_s / r.replay_time_s - 1), w.description);
  }
  out += "  iteration saved with one op type at its group's mean:";
  for (const auto& [category, seconds] : r.slowdown_by_category_s)
    out += fmt::format(" {} {:.4f} s", category, seconds);
  return out + "\n";
}

std::string to_json(const TraceWhatIfReport& r) {
  JsonWriter w;
  w.begin_object();
  w.field("backend", r.backend).field("iteration_time_s", r.iteration_time_s).field("replay_time_s", r.replay_time_s);
  w.key("slowest").begin_array();
  for (const RankSlowdown& s : r.slowest) {
    w.begin_object().key("ranks").begin_array();
    for (const std::int64_t rank : s.ranks) w.value(rank);
    w.end_array().field("stage", s.stage).field("replica", s.replica).field("slowdown", s.slowdown).end_object();
  }
  w.end_array();
  w.key("critical_ranks").begin_array();
  for (const std::int64_t rank : r.critical_ranks) w.value(rank);
  w.end_array();
  w.key("whatif");
  write_whatifs(w, r.whatifs, r.replay_time_s);
  w.key("slowdown_by_category_s").begin_object();
  for (const auto& [category, seconds] : r.slowdown_by_category_s) w.field(category, seconds);
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
