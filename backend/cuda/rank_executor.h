// Runs one rank's share of a models::Workload for real on its GPU: its stage program with the
// stream and dependency semantics of models/workload.h, compute through OpRunner (cuBLASLt bf16
// GEMMs, streaming kernels) and communication through NCCL on the rank's communicators (NcclComms).
// The data is synthetic; the shapes, bytes and order are the plan's.
//
// The host enqueues a whole iteration without synchronising, tasks in program order, each on its
// stream after cudaStreamWaitEvent on the end events of its dependencies on other streams (a task
// depends only on earlier tasks, so every event it waits on is recorded first):
//  - compute tasks on the compute stream, their kernel lists op by op. A list's tensor-parallel
//    collectives (`count` calls per run) run after its ops on the compute stream, except those the
//    builder marks overlappable (TP comm/GEMM overlap, Megatron's asynchronous backward calls),
//    which start with the list on a TP stream, concurrently with its ops, and which the compute
//    stream waits for at the list's end. tp_exposed = per run, how far the overlapped calls ended
//    after the ops, plus the time of the serial calls;
//  - pipeline sends and receives on one stream per directed pair of stages (pipeline_channels.h):
//    NCCL point-to-point calls match in issue order, and a CUDA stream runs one at a time, so a
//    transfer is "posted" when its stream reaches it (its dependencies met and the earlier
//    transfers of its channel done). Unlike the simulator's and the cpu backend's non-blocking
//    posts, transfers on one channel therefore do not overlap one another;
//  - data-parallel collectives one at a time in program order on the DP stream; over a data group
//    of one they end as they are issued.
// Records: CUDA events around each task (start recorded when its stream reaches it), nanoseconds
// from a base event recorded after a barrier on the world communicator, on each GPU's clock.
//
// A watchdog (backend/watchdog.h) guards every iteration: when NCCL reports an asynchronous error or
// the iteration runs longer than the timeout, it aborts the communicators (ncclCommAbort), and
// run_iteration throws CudaError naming the rank and the first task that had not finished. The
// executor is unusable after that.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/nccl_comms.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend::cuda {

class CudaRankExecutor {
 public:
  // Prepares the rank's streams, events, kernels and buffers on the current device. `workload` and
  // `comms` must outlive the executor. Throws CudaError when the schedule's pipeline messages cannot
  // be matched in order (check_fifo_order) or on CUDA/cuBLASLt failures, sim::ConfigError
  // ("plan.micro_batch_size") naming the bytes when the rank's buffers do not fit the GPU.
  CudaRankExecutor(const models::Workload& workload, NcclComms& comms, std::chrono::milliseconds timeout);
  ~CudaRankExecutor();
  CudaRankExecutor(const CudaRankExecutor&) = delete;
  CudaRankExecutor& operator=(const CudaRankExecutor&) = delete;

  // Runs one iteration (every rank calls it together) and returns this rank's records, indexed like
  // its stage program's tasks.
  std::vector<TaskRecord> run_iteration();

  // Device bytes of the rank's buffers (kernels' operands, pipeline messages, collectives).
  [[nodiscard]] std::size_t device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::backend::cuda
