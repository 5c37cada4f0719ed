#include "backend/cpu/cpu_backend.h"

#include <mpi.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "backend/cpu/cpu_executor.h"
#include "backend/cpu/mpi_session.h"
#include "models/parallel_groups.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

// Rank 0 receives every rank's records of one iteration (TaskRecord is four int64 values).
std::vector<std::vector<TaskRecord>> gather_records(const std::vector<TaskRecord>& mine, int rank, int size) {
  static_assert(sizeof(TaskRecord) == 4 * sizeof(std::int64_t));
  const int count = static_cast<int>(mine.size() * 4);
  std::vector<int> counts(static_cast<std::size_t>(size), 0);
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather (record counts)");
  std::vector<int> offsets(static_cast<std::size_t>(size), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<std::int64_t> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
  check_mpi(MPI_Gatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T, 0,
                        MPI_COMM_WORLD),
            "MPI_Gatherv (task records)");
  std::vector<std::vector<TaskRecord>> out;
  if (rank != 0) return out;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const auto* first = reinterpret_cast<const TaskRecord*>(all.data() + offsets[r]);
    out.emplace_back(first, first + counts[r] / 4);
  }
  return out;
}

// A pipeline transfer's data can begin to move once both its send and its recv are posted (the
// simulator's definition): each side's transfer_start is the later of the two posts. The ranks'
// clocks start together at a barrier, a few microseconds apart at most.
void set_transfer_starts(const models::Workload& workload, Trace& trace) {
  const models::ParallelLayout layout{workload.plan.tp, workload.plan.pp, workload.plan.dp};
  // Per stage: (tag, kind) -> task index.
  std::vector<std::map<std::pair<std::int64_t, models::TaskKind>, std::size_t>> by_tag(workload.stages.size());
  for (std::size_t s = 0; s < workload.stages.size(); ++s) {
    const auto& tasks = workload.stages[s].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind == models::TaskKind::kPpSend || tasks[i].kind == models::TaskKind::kPpRecv) {
        by_tag[s][{tasks[i].tag, tasks[i].kind}] = i;
      }
    }
  }
  for (TraceUnit& unit : trace.units) {
    const std::int64_t rank = unit.ranks.front();
    const auto& tasks = workload.stages[static_cast<std::size_t>(unit.stage)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const models::Task& t = tasks[i];
      if (t.kind != models::TaskKind::kPpSend && t.kind != models::TaskKind::kPpRecv) continue;
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

std::vector<Trace> run_cpu_iterations(const models::Workload& workload, const CpuRunOptions& options) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (size != workload.plan.world_size) {
    throw sim::ConfigError("cluster.gpus", std::to_string(workload.plan.world_size),
                           "the number of MPI processes of the job (" + std::to_string(size) + ")");
  }
  if (options.warmup_iterations < 0 || options.iterations < 1) {
    throw sim::ConfigError("--iterations", std::to_string(options.iterations), "at least 1 (and warm-up >= 0)");
  }
  CpuRankExecutor executor(workload, rank);
  for (int i = 0; i < options.warmup_iterations; ++i) executor.run_iteration();
  std::vector<Trace> traces;
  for (int i = 0; i < options.iterations; ++i) {
    const std::vector<TaskRecord> records = executor.run_iteration();
    std::vector<std::vector<TaskRecord>> all = gather_records(records, rank, size);
    if (rank != 0) continue;
    const models::ParallelLayout layout{workload.plan.tp, workload.plan.pp, workload.plan.dp};
    Trace trace;
    trace.backend = "cpu";
    for (std::size_t r = 0; r < all.size(); ++r) {
      TraceUnit unit;
      const auto global = static_cast<std::int64_t>(r);
      unit.ranks = {global};
      unit.stage = static_cast<std::int32_t>(layout.pp_rank(global));
      unit.replica = static_cast<std::int32_t>(layout.dp_rank(global));
      unit.records = std::move(all[r]);
      for (const TaskRecord& record : unit.records) trace.iteration_time = std::max(trace.iteration_time, record.end);
      trace.units.push_back(std::move(unit));
    }
    set_transfer_starts(workload, trace);
    traces.push_back(std::move(trace));
  }
  return traces;
}

}  // namespace megasim::backend::cpu
