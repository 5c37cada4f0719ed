// Streams and dependencies (models/workload.h): a task starts when it is the head of its stream, the
// stream is free and its deps are done. Compute and DP tasks hold their stream until they end; PP
// sends and recvs are posted in order without holding it.
#include "backend/sim/executor_impl.h"
#include "sim/error.h"

namespace megasim::backend::detail {

void Executor::try_advance(std::int32_t u, std::size_t stream) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  const std::vector<std::int32_t>& order = stages_[static_cast<std::size_t>(unit.stage)].stream_tasks[stream];
  while (unit.next[stream] < order.size() && !unit.busy[stream]) {
    const std::int32_t task = order[unit.next[stream]];
    if (unit.tasks[static_cast<std::size_t>(task)].pending > 0) return;
    ++unit.next[stream];
    start_task(u, task);
  }
}

void Executor::start_task(std::int32_t u, std::int32_t task) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  const StageInfo& info = stages_[static_cast<std::size_t>(unit.stage)];
  const auto index = static_cast<std::size_t>(task);
  unit.tasks[index].status = TaskStatus::kStarted;
  TaskRecord& r = record(u, task);
  r.start = r.transfer_start = sim_.now();
  switch (info.kind[index]) {
    case models::TaskKind::kCompute: {
      unit.busy[info.stream[index]] = true;
      r.tp_exposed = unit.times->tp_exposed[static_cast<std::size_t>(task)];
      const sim::SimTime duration = unit.times->duration[static_cast<std::size_t>(task)];
      sim::SimTime end = sim::add_time(sim_.now(), duration, "a compute task's end");
      if (!pauses_.empty()) {
        end = sim::add_time(end, pauses_[static_cast<std::size_t>(u)].delay(sim_.now(), duration),
                            "a compute task's end with its pauses");
      }
      sim_.schedule_at(end, [this, u, task] { finish_task(u, task); });
      return;
    }
    case models::TaskKind::kPpSend:
    case models::TaskKind::kPpRecv:
      post(u, task);
      return;
    case models::TaskKind::kDpCollective:
      unit.busy[info.stream[index]] = true;
      issue_dp(u, task);
      return;
  }
  MEGASIM_ASSERT(false, "unknown task kind");
}

void Executor::finish_task(std::int32_t u, std::int32_t task) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  const StageInfo& info = stages_[static_cast<std::size_t>(unit.stage)];
  const auto index = static_cast<std::size_t>(task);
  TaskStatus& status = unit.tasks[index].status;
  MEGASIM_ASSERT(status == TaskStatus::kStarted, "a task ended twice");
  status = TaskStatus::kDone;
  record(u, task).end = sim_.now();
  const std::size_t own_stream = info.stream[index];
  if (info.kind[index] == models::TaskKind::kCompute || info.kind[index] == models::TaskKind::kDpCollective) {
    unit.busy[own_stream] = false;
  }
  const auto first = static_cast<std::size_t>(info.dependents_begin[index]);
  const auto last = static_cast<std::size_t>(info.dependents_begin[index + 1]);
  for (std::size_t i = first; i < last; ++i) {
    const auto dependent = static_cast<std::size_t>(info.dependents[i]);
    if (--unit.tasks[dependent].pending == 0) try_advance(u, info.stream[dependent]);
  }
  try_advance(u, own_stream);
}

}  // namespace megasim::backend::detail
