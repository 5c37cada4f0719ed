// What-if analysis of a recorded iteration, simulated or measured by a real backend (Lin et al.,
// OSDI'25 style): the iteration replayed (trace_replay.h) with the compute of its ranks evened out
// in a few ways, so the cost of stragglers can be read off data from a real run.
//
// Groups. A rank's group is its data-parallel group: the units of the same stage and TP rank (the
// simulator's one unit per (stage, replica) TP group: the units of the stage). The group mean of a
// task is the mean of its compute duration over the group's units; a unit's slowdown is its compute
// sum over its group's mean compute sum.
// What-ifs, all against the replay of the recorded compute (`replay_time_s`; savings relative to it):
//  - group_mean_compute: every task at its group mean;
//  - fix_slowest_ranks: the k units of largest slowdown (> 1) at their group mean;
//  - balanced_last_stage (pp > 1): the last stage's compute scaled by the mean compute of the other
//    stages over its own (Megatron's last stage carries the logits and the loss);
// and per task category the iteration time saved when only that category runs at its group mean
// (the slowdown attributed to that op type).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/report/straggler_report.h"

namespace megasim::scenarios {

struct RankSlowdown {
  std::vector<std::int64_t> ranks;  // the unit's ranks (one for a real backend's trace)
  std::int32_t stage = 0;
  std::int32_t replica = 0;
  double slowdown = 1;  // compute sum / the group's mean compute sum
};

struct TraceWhatIfReport {
  std::string backend;
  double iteration_time_s = 0;               // as recorded
  double replay_time_s = 0;                  // the replay of the recorded compute: the baseline of the what-ifs
  std::vector<RankSlowdown> slowest;         // slowdown > 1, slowest first, at most 8
  std::vector<std::int64_t> critical_ranks;  // ranks of the units on the recorded critical path
  std::vector<StragglerWhatIf> whatifs;
  // (category, seconds the iteration saves with only that category at its group mean), categories
  // that have compute tasks, in TaskCategory order.
  std::vector<std::pair<std::string, double>> slowdown_by_category_s;
};

// Throws as replay_trace (sim::ConfigError "trace") for a trace that does not cover the plan, and
// ("whatif.slowest") for slowest < 0.
TraceWhatIfReport analyse_trace(const models::Workload& workload, const backend::Trace& trace, std::int64_t slowest);

std::string to_text(const TraceWhatIfReport& report);
// Keys: backend, iteration_time_s, replay_time_s, slowest [{ranks, stage, replica, slowdown}],
// critical_ranks, whatif [{name, description, iteration_time_s, saving_percent}],
// slowdown_by_category_s {category: seconds}.
std::string to_json(const TraceWhatIfReport& report);

}  // namespace megasim::scenarios
