// The per-unit time breakdown and the DP x PP heat map (rules in iteration_report.h).
#include <algorithm>
#include <cstddef>
#include <utility>

#include "scenarios/report/iteration_report.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

struct Interval {
  SimTime begin = 0;
  SimTime end = 0;
};

// Nanosecond totals: integer sums keep the partition exact. `pipeline` is the idle time spent
// waiting for another stage of the same replica, split into bubble and waiting at the end.
struct Totals {
  SimTime compute = 0, tp = 0, pp = 0, dp = 0, bubble = 0, waiting = 0, pipeline = 0;
};

bool is_pp(models::TaskKind kind) {
  return kind == models::TaskKind::kPpSend || kind == models::TaskKind::kPpRecv;
}

// Sorts intervals by start and merges those that overlap or touch.
std::vector<Interval> sort_and_merge(std::vector<Interval> out) {
  std::sort(out.begin(), out.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> merged;
  for (const Interval& iv : out) {
    if (!merged.empty() && iv.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, iv.end);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

// Compact copies of what the walks read of every task of a stage program (a unit's walk reads each
// task, and the tasks themselves are large): built once per stage, not per unit.
struct StageTasks {
  std::vector<models::TaskKind> kind;
  std::vector<models::TaskCategory> category;
  std::vector<std::int32_t> compute;  // the compute tasks, in program order
};

StageTasks stage_tasks(const models::StageProgram& program) {
  StageTasks t;
  t.kind.reserve(program.tasks.size());
  t.category.reserve(program.tasks.size());
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    t.kind.push_back(program.tasks[i].kind);
    t.category.push_back(program.tasks[i].category);
    if (program.tasks[i].kind == models::TaskKind::kCompute) t.compute.push_back(static_cast<std::int32_t>(i));
  }
  return t;
}

std::vector<StageTasks> all_stage_tasks(const models::Workload& workload) {
  std::vector<StageTasks> out;
  out.reserve(workload.stages.size());
  for (const models::StageProgram& program : workload.stages) out.push_back(stage_tasks(program));
  return out;
}

SimTime last_compute_end(const StageTasks& tasks, const backend::TraceUnit& unit) {
  SimTime end = 0;
  for (const std::int32_t i : tasks.compute) end = std::max(end, unit.records[static_cast<std::size_t>(i)].end);
  return end;
}

struct TransferIntervals {
  std::vector<Interval> dp;  // the unit's DP collectives
  std::vector<Interval> pp;  // its PP transfers
};

// [transfer_start, end) of the unit's DP collectives and PP transfers, each set sorted and merged.
TransferIntervals transfers(const StageTasks& tasks, const backend::TraceUnit& unit) {
  TransferIntervals out;
  for (std::size_t i = 0; i < tasks.kind.size(); ++i) {
    const models::TaskKind kind = tasks.kind[i];
    if (kind == models::TaskKind::kCompute) continue;
    const backend::TaskRecord& r = unit.records[i];
    if (r.end <= r.transfer_start) continue;
    if (kind == models::TaskKind::kDpCollective) {
      out.dp.push_back({r.transfer_start, r.end});
    } else if (is_pp(kind)) {
      out.pp.push_back({r.transfer_start, r.end});
    }
  }
  return {sort_and_merge(std::move(out.dp)), sort_and_merge(std::move(out.pp))};
}

// Length of [a, b) covered by the merged intervals.
SimTime covered(const std::vector<Interval>& merged, SimTime a, SimTime b) {
  SimTime sum = 0;
  for (const Interval& iv : merged) {
    if (iv.begin >= b) break;
    sum += std::max<SimTime>(0, std::min(b, iv.end) - std::max(a, iv.begin));
  }
  return sum;
}

// Whether t lies in the merged intervals, for t that never decrease between calls: `next` is the
// first interval that may still contain or follow t.
bool inside(const std::vector<Interval>& merged, SimTime t, std::size_t& next) {
  while (next < merged.size() && merged[next].end <= t) ++next;
  return next < merged.size() && merged[next].begin <= t;
}

class UnitWalk {
 public:
  UnitWalk(const models::ResolvedPlan& plan, const models::StageProgram& program, const StageTasks& tasks,
           const backend::TraceUnit& unit, SimTime iteration_end, SimTime drain_end, TransferIntervals intervals)
      : plan_(plan),
        program_(program),
        tasks_(tasks),
        unit_(unit),
        end_(iteration_end),
        drain_end_(drain_end),
        dp_(std::move(intervals.dp)),
        pp_(std::move(intervals.pp)) {}

  Totals run() {
    std::vector<std::int32_t> order = tasks_.compute;
    // One stream runs them in program order, so they mostly come sorted already.
    const auto by_start = [this](std::int32_t a, std::int32_t b) { return record(a).start < record(b).start; };
    if (!std::is_sorted(order.begin(), order.end(), by_start)) std::stable_sort(order.begin(), order.end(), by_start);
    SimTime cursor = 0;
    SimTime passes = 0;  // forward and backward time, the base of the schedule's bubble
    for (const std::int32_t task : order) {
      const backend::TaskRecord& r = record(task);
      const SimTime start = std::clamp(r.start, cursor, end_);
      if (start > cursor) gap(cursor, start, task);
      const SimTime busy_end = std::clamp(r.end, start, end_);
      const SimTime tp = std::min(std::max<SimTime>(0, r.tp_exposed), busy_end - start);
      totals_.tp += tp;
      totals_.compute += busy_end - start - tp;
      const models::TaskCategory category = tasks_.category[static_cast<std::size_t>(task)];
      if (category == models::TaskCategory::kForward || category == models::TaskCategory::kBackward) {
        passes += busy_end - start;
      }
      cursor = busy_end;
    }
    tail(cursor);
    // The schedule's own bubble: (p-1)/(v*m) of the passes (Narayanan et al. 2021), rounded up so
    // the ideal pipeline's idle time is all bubble.
    const std::int64_t chunks = std::max<std::int64_t>(1, plan_.virtual_stages * plan_.num_microbatches);
    const SimTime share = (passes * (plan_.pp - 1) + chunks - 1) / chunks;
    totals_.bubble = std::min(totals_.pipeline, share);
    totals_.waiting += totals_.pipeline - totals_.bubble;
    return totals_;
  }

 private:
  [[nodiscard]] const backend::TaskRecord& record(std::int32_t task) const {
    return unit_.records[static_cast<std::size_t>(task)];
  }

  // The idle gap [g0, g1) before compute task `task`, blamed on its blocking dependency; the part
  // before a PP dependency was posted goes to that task's own blocking dependency, and so on.
  void gap(SimTime g0, SimTime g1, std::int32_t task) {
    while (g1 > g0) {
      const std::int32_t blocking = blocking_dep(task);
      const models::TaskKind kind =
          blocking < 0 ? models::TaskKind::kCompute : tasks_.kind[static_cast<std::size_t>(blocking)];
      if (kind == models::TaskKind::kCompute) {
        totals_.waiting += g1 - g0;
        return;
      }
      const backend::TaskRecord& b = record(blocking);
      const SimTime e = std::clamp(b.end, g0, g1);
      totals_.waiting += g1 - e;
      if (kind == models::TaskKind::kDpCollective) {
        const SimTime exposed = covered(dp_, g0, e);
        totals_.dp += exposed;
        totals_.waiting += e - g0 - exposed;
        return;
      }
      const SimTime posted = std::clamp(b.start, g0, e);
      const SimTime transfer = std::clamp(b.transfer_start, posted, e);
      totals_.pp += e - transfer;
      totals_.pipeline += transfer - posted;
      g1 = posted;
      task = blocking;
    }
  }

  // The dependency of `task` that ended last (the first such in `deps`); -1 when none.
  [[nodiscard]] std::int32_t blocking_dep(std::int32_t task) const {
    std::int32_t blocking = -1;
    for (const std::int32_t dep : program_.tasks[static_cast<std::size_t>(task)].deps) {
      MEGASIM_ASSERT(dep >= 0 && dep < task, "a task depends on earlier tasks only");
      if (blocking < 0 || record(dep).end > record(blocking).end) blocking = dep;
    }
    return blocking;
  }

  // [from, iteration end): DP transfers, then PP transfers, then the draining pipeline, then waiting.
  void tail(SimTime from) {
    std::vector<SimTime> cuts{from, end_, std::clamp(drain_end_, from, end_)};
    for (const std::vector<Interval>* set : {&dp_, &pp_}) {
      for (const Interval& iv : *set) {
        if (iv.end <= from || iv.begin >= end_) continue;  // its cuts would be `from` or the end
        cuts.push_back(std::clamp(iv.begin, from, end_));
        cuts.push_back(std::clamp(iv.end, from, end_));
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::size_t next_dp = 0, next_pp = 0;
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      const SimTime a = cuts[k];
      const SimTime length = cuts[k + 1] - a;
      const bool in_pp = inside(pp_, a, next_pp);  // both advance with a
      if (inside(dp_, a, next_dp)) {
        totals_.dp += length;
      } else if (in_pp) {
        totals_.pp += length;
      } else if (a < drain_end_) {
        totals_.pipeline += length;
      } else {
        totals_.waiting += length;
      }
    }
  }

  const models::ResolvedPlan& plan_;
  const models::StageProgram& program_;  // the tasks' dependencies
  const StageTasks& tasks_;
  const backend::TraceUnit& unit_;
  SimTime end_;
  SimTime drain_end_;
  std::vector<Interval> dp_;
  std::vector<Interval> pp_;
  Totals totals_;
};

void check_unit(const models::Workload& workload, const backend::TraceUnit& unit) {
  MEGASIM_ASSERT(unit.stage >= 0 && static_cast<std::size_t>(unit.stage) < workload.stages.size(),
                 "trace unit of a stage the workload does not have");
  MEGASIM_ASSERT(unit.replica >= 0 && unit.replica < workload.plan.replicas(), "trace unit of an unknown replica");
  MEGASIM_ASSERT(unit.records.size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                 "trace unit records do not match its stage program");
}

RankBreakdown to_breakdown(const Totals& t, SimTime iteration_end) {
  return RankBreakdown{sim::to_seconds(t.compute),    sim::to_seconds(t.tp),     sim::to_seconds(t.pp),
                       sim::to_seconds(t.dp),         sim::to_seconds(t.bubble), sim::to_seconds(t.waiting),
                       sim::to_seconds(iteration_end)};
}

}  // namespace

std::vector<sim::SimTime> compute_stream_ends(const models::Workload& workload, const backend::Trace& trace) {
  const std::vector<StageTasks> stage_tables = all_stage_tasks(workload);
  std::vector<sim::SimTime> out;
  out.reserve(trace.units.size());
  for (const backend::TraceUnit& unit : trace.units) {
    check_unit(workload, unit);
    out.push_back(last_compute_end(stage_tables[static_cast<std::size_t>(unit.stage)], unit));
  }
  return out;
}

std::vector<RankBreakdown> breakdown_by_unit(const models::Workload& workload, const backend::Trace& trace) {
  const std::size_t pp = static_cast<std::size_t>(workload.plan.pp);
  const std::vector<StageTasks> stage_tables = all_stage_tasks(workload);
  // Last compute end per (replica, stage), for the pipeline drain of the tail.
  const std::vector<SimTime> unit_end = compute_stream_ends(workload, trace);
  std::vector<SimTime> cell_end(static_cast<std::size_t>(workload.plan.replicas()) * pp, 0);
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    SimTime& cell = cell_end[static_cast<std::size_t>(unit.replica) * pp + static_cast<std::size_t>(unit.stage)];
    cell = std::max(cell, unit_end[u]);
  }
  std::vector<RankBreakdown> out;
  out.reserve(trace.units.size());
  for (const backend::TraceUnit& unit : trace.units) {
    SimTime drain_end = 0;
    for (std::size_t s = 0; s < pp; ++s) {
      if (s != static_cast<std::size_t>(unit.stage)) {
        drain_end = std::max(drain_end, cell_end[static_cast<std::size_t>(unit.replica) * pp + s]);
      }
    }
    const models::StageProgram& program = workload.stages[static_cast<std::size_t>(unit.stage)];
    const StageTasks& tasks = stage_tables[static_cast<std::size_t>(unit.stage)];
    UnitWalk walk(workload.plan, program, tasks, unit, trace.iteration_time, drain_end, transfers(tasks, unit));
    out.push_back(to_breakdown(walk.run(), trace.iteration_time));
  }
  return out;
}

HeatMap heat_map(const models::Workload& workload, const backend::Trace& trace,
                 const std::vector<RankBreakdown>& by_unit) {
  MEGASIM_ASSERT(by_unit.size() == trace.units.size(), "one breakdown per trace unit");
  HeatMap map{workload.plan.replicas(), workload.plan.pp, {}, {}};
  const std::size_t pp = static_cast<std::size_t>(map.pp);
  const std::size_t cells = static_cast<std::size_t>(map.dp) * pp;
  map.compute_s.assign(cells, 0.0);
  map.slowdown.assign(cells, 0.0);
  std::vector<bool> covered_cell(cells, false);
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    check_unit(workload, unit);
    const std::size_t cell = static_cast<std::size_t>(unit.replica) * pp + static_cast<std::size_t>(unit.stage);
    map.compute_s[cell] = std::max(map.compute_s[cell], by_unit[u].compute_s + by_unit[u].tp_exposed_s);
    covered_cell[cell] = true;
  }
  for (std::size_t s = 0; s < pp; ++s) {
    double sum = 0;
    double count = 0;
    for (std::size_t cell = s; cell < cells; cell += pp) {
      if (!covered_cell[cell]) continue;
      sum += map.compute_s[cell];
      count += 1;
    }
    const double mean = count > 0 ? sum / count : 0.0;
    for (std::size_t cell = s; cell < cells; cell += pp) {
      if (covered_cell[cell] && mean > 0) map.slowdown[cell] = map.compute_s[cell] / mean;
    }
  }
  return map;
}

}  // namespace megasim::scenarios
