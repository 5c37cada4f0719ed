#include "backend/measured_trace.h"

#include <algorithm>
#include <map>
#include <utility>

#include "models/parallel_groups.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

bool is_p2p(const models::Task& task) {
  return task.kind == models::TaskKind::kPpSend || task.kind == models::TaskKind::kPpRecv;
}

void set_transfer_starts(const models::Workload& workload, const models::ParallelLayout& layout, Trace& trace) {
  // Per stage: (tag, kind) -> task index.
  std::vector<std::map<std::pair<std::int64_t, models::TaskKind>, std::size_t>> by_tag(workload.stages.size());
  for (std::size_t s = 0; s < workload.stages.size(); ++s) {
    const auto& tasks = workload.stages[s].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (is_p2p(tasks[i])) by_tag[s][{tasks[i].tag, tasks[i].kind}] = i;
    }
  }
  for (TraceUnit& unit : trace.units) {
    const std::int64_t rank = unit.ranks.front();
    const auto& tasks = workload.stages[static_cast<std::size_t>(unit.stage)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const models::Task& t = tasks[i];
      if (!is_p2p(t)) continue;
      const std::int64_t pp = layout.pipeline;
      const std::int64_t peer_stage = ((unit.stage + t.peer_offset) % pp + pp) % pp;
      const std::int64_t peer = layout.rank_of(layout.tp_rank(rank), layout.dp_rank(rank), peer_stage);
      const models::TaskKind other =
          t.kind == models::TaskKind::kPpSend ? models::TaskKind::kPpRecv : models::TaskKind::kPpSend;
      const std::size_t match = by_tag[static_cast<std::size_t>(peer_stage)].at({t.tag, other});
      const TaskRecord& theirs = trace.units[static_cast<std::size_t>(peer)].records[match];
      TaskRecord& mine = unit.records[i];
      mine.transfer_start = std::min(mine.end, std::max(mine.start, theirs.start));
    }
  }
}

}  // namespace

Trace measured_trace(const models::Workload& workload, std::string backend_name,
                     std::vector<std::vector<TaskRecord>> records) {
  const models::ParallelLayout layout = workload.plan.layout();
  MEGASIM_ASSERT(static_cast<std::int64_t>(records.size()) == layout.world_size(),
                 "one record list per rank of the plan");
  Trace trace;
  trace.backend = std::move(backend_name);
  for (std::size_t r = 0; r < records.size(); ++r) {
    TraceUnit unit;
    const auto global = static_cast<std::int64_t>(r);
    unit.ranks = {global};
    unit.stage = static_cast<std::int32_t>(layout.pp_rank(global));
    unit.replica = static_cast<std::int32_t>(layout.dp_rank(global));
    MEGASIM_ASSERT(records[r].size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                   "a rank's records are as many as its stage program's tasks");
    unit.records = std::move(records[r]);
    for (const TaskRecord& record : unit.records) trace.iteration_time = std::max(trace.iteration_time, record.end);
    trace.units.push_back(std::move(unit));
  }
  set_transfer_starts(workload, layout, trace);
  return trace;
}

}  // namespace megasim::backend
