// Runs one rank's share of a models::Workload for real on the CPU: its stage program, with the
// stream and dependency semantics of models/workload.h, compute through CpuKernels (float32 Eigen)
// and communication through MPI on the rank's groups (RankGroups). The data is synthetic; shapes,
// bytes and order are the plan's.
//
// One thread plays the four streams:
//  - compute tasks run to completion on the thread, their kernel lists op by op; the TP collectives
//    of a list (tp_collectives, `count` calls per run of the list) run blocking on the tensor group
//    after the list's ops (a CPU has no second engine to overlap them with), and their time is the
//    task's tp_exposed;
//  - kPpSend / kPpRecv are posted in program order once their deps are met (MPI_Isend / MPI_Irecv
//    on the pipeline group to the peer stage, tag = the task's tag as a dense index, see below);
//  - kDpCollective tasks are issued one at a time in program order on the data group
//    (MPI_Iallreduce, MPI_Ireduce_scatter_block, MPI_Iallgather, ...), sized as nccl-tests sizes
//    them (task.bytes is the whole buffer: the input of a reduce-scatter, the output of an
//    all-gather), float32 elements; over a data group of one they end as they are issued;
//  - outstanding transfers are tested after every op of a compute task (which also gives MPI's
//    progress engine its turns); with nothing to run, the thread waits for the next completion.
// Stalls: the thread never blocks in MPI. It tests its requests and waits with a deadline: when no
// task finished for `timeout` (a peer that died, a schedule that deadlocks), run_iteration throws
// MpiError naming the rank and what it was waiting for (the iteration barrier, or its outstanding
// tasks), which the command turns into MPI_Abort of the job. Requests that cannot be cancelled
// (collectives) are kept and tested again when the executor is destroyed.
// A task's record: start = started (compute) or posted/issued (communication), transfer_start = start
// (run_cpu_iterations sets a pipeline transfer's from both sides), end = when it was seen complete;
// nanoseconds from the iteration start (after a barrier on the world).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/mpi/mpi_session.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend::cpu {

class CpuRankExecutor {
 public:
  // `workload` must outlive the executor; the world size must be the plan's world size.
  CpuRankExecutor(const models::Workload& workload, int world_rank,
                  std::chrono::milliseconds timeout = std::chrono::seconds(300));
  ~CpuRankExecutor();
  CpuRankExecutor(const CpuRankExecutor&) = delete;
  CpuRankExecutor& operator=(const CpuRankExecutor&) = delete;

  [[nodiscard]] std::int64_t stage() const { return stage_; }
  [[nodiscard]] std::int64_t replica() const { return replica_; }

  // Runs one iteration (every rank of the world calls it together) and returns this rank's records,
  // indexed like its stage program's tasks.
  std::vector<TaskRecord> run_iteration();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t stage_ = 0;
  std::int64_t replica_ = 0;
};

}  // namespace megasim::backend::cpu
