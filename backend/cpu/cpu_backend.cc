#include "backend/cpu/cpu_backend.h"

#include <mpi.h>

#include <algorithm>
#include <string>
#include <utility>

#include "backend/cpu/cpu_executor.h"
#include "backend/measured_trace.h"
#include "backend/mpi/mpi_session.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

// Rank 0 receives every rank's records of one iteration (TaskRecord is four int64 values).
std::vector<std::vector<TaskRecord>> gather_records(const std::vector<TaskRecord>& mine, int rank, int size) {
  static_assert(sizeof(TaskRecord) == 4 * sizeof(std::int64_t));
  const int count = static_cast<int>(mine.size() * 4);
  std::vector<int> counts(static_cast<std::size_t>(size), 0);
  mpi::check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
                 "MPI_Gather (record counts)");
  std::vector<int> offsets(static_cast<std::size_t>(size), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<std::int64_t> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
  mpi::check_mpi(MPI_Gatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(), MPI_INT64_T, 0,
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

}  // namespace

std::vector<Trace> run_cpu_iterations(const models::Workload& workload, const CpuRunOptions& options) {
  int rank = 0;
  int size = 0;
  mpi::check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  mpi::check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (size != workload.plan.world_size) {
    throw sim::ConfigError("cluster.gpus", std::to_string(workload.plan.world_size),
                           "the number of MPI processes of the job (" + std::to_string(size) + ")");
  }
  if (options.warmup_iterations < 0 || options.iterations < 1) {
    throw sim::ConfigError("--iterations", std::to_string(options.iterations), "at least 1 (and warm-up >= 0)");
  }
  CpuRankExecutor executor(workload, rank, options.timeout);
  for (int i = 0; i < options.warmup_iterations; ++i) executor.run_iteration();
  std::vector<Trace> traces;
  for (int i = 0; i < options.iterations; ++i) {
    if (options.before_iteration) options.before_iteration(i);
    const std::vector<TaskRecord> records = executor.run_iteration();
    std::vector<std::vector<TaskRecord>> all = gather_records(records, rank, size);
    if (rank != 0) continue;
    Trace trace = measured_trace(workload, "cpu", std::move(all));
    traces.push_back(std::move(trace));
  }
  return traces;
}

}  // namespace megasim::backend::cpu
