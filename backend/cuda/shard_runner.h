// The cuda backend's shard mode (DESIGN.md "Real backends": a single GPU can still measure a rank's
// compute shard): the compute of one pipeline stage's rank, run for real on the current GPU and
// timed per task with CUDA events, returned as the same Trace the simulator fills, so that report
// and validate compare it with the prediction.
//
// What runs. The stage program's compute tasks (models/workload.h), in program order on one
// stream, each kernel list `repeat` times, each op as OpRunner plays it (op_runner.h: cuBLASLt bf16
// GEMMs, the fused FlashAttention-2 kernels, streaming kernels for memory-bound ops).
// The shard measures compute only: a single GPU has no peers, so the kernel lists' tensor-parallel
// collectives, the pipeline sends and receives and the data-parallel collectives do not run, and
// tp_exposed is 0. The data is synthetic and one arena sized for the largest ops is reused (no
// weights, activations or optimizer state are held), so a shard that runs here says nothing about
// whether the plan's memory fits.
//
// Records (nanoseconds from the iteration's first event, on the GPU's clock):
//  - a compute task with ops: start = an event recorded before its first op, end = one recorded
//    after its last (cudaEventElapsedTime, 0.5 µs resolution), transfer_start = start. Tasks run
//    back to back, so a task's start is at or after the previous one's end; the host enqueues the
//    whole iteration without synchronising, so gaps are the GPU waiting for launches;
//  - every other task (pp send/recv, dp collectives, compute tasks without ops such as data
//    loading): zero length at the end of the preceding compute task in program order (0 if none).
// One Trace per measured iteration: backend "cuda", one TraceUnit for the stage's first rank (tp
// rank 0 of replica 0: rank = stage · tp · dp in Megatron's order), replica 0, records indexed like
// the stage program's tasks; iteration_time is the last record's end.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend::cuda {

class ShardRunner {
 public:
  // Prepares the stage's compute on the current device: one stream, two events per compute task
  // with ops, every GEMM shape configured, one operand arena for the largest GEMM and buffers for
  // the largest memory-bound op, filled once. `workload` must outlive the runner.
  // Throws sim::ConfigError("--stage") unless 0 <= stage < pp (checked before any CUDA call);
  // sim::ConfigError("plan.tensor_model_parallel_size") naming the bytes needed when the device
  // lacks the memory for the buffers; CudaError on other CUDA or cuBLASLt failures (no GPU, no
  // libcublasLt).
  ShardRunner(const models::Workload& workload, std::int64_t stage);
  ~ShardRunner();
  ShardRunner(const ShardRunner&) = delete;
  ShardRunner& operator=(const ShardRunner&) = delete;

  // Plays `warmup_iterations` unrecorded iterations, then `iterations` measured ones, each followed
  // by one stream synchronisation (none inside an iteration). Throws sim::ConfigError("--iterations")
  // unless iterations >= 1 and warmup_iterations >= 0.
  std::vector<Trace> run(int warmup_iterations, int iterations);

  [[nodiscard]] std::int64_t stage() const { return stage_; }
  // The global rank whose compute the shard measures: tp rank 0 of replica 0 of the stage.
  [[nodiscard]] std::int64_t rank() const { return rank_; }
  // Device bytes the runner's buffers take (GEMM operands, cuBLASLt workspace, streaming buffers).
  [[nodiscard]] std::size_t device_bytes() const { return device_bytes_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::int64_t stage_ = 0;
  std::int64_t rank_ = 0;
  std::size_t device_bytes_ = 0;
};

}  // namespace megasim::backend::cuda
