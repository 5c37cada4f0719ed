// The compute ops of a stage's kernel lists (models/layer_ops.h) on the current GPU, as the shard
// runner and the rank executor play them:
//  - kGemm, and kAttention without FlashAttention (Megatron's unfused Q·Kᵀ and P·V): one batched
//    cuBLASLt bf16 GEMM of the op's shape (gemm_runner.h; ops with a zero dimension do no work and
//    are skipped);
//  - kAttention with a FlashAttention kernel (models::uses_flash_kernel): the fused FlashAttention-2
//    kernels of flash_attention.h, also for a plan.attention_kernel of flash_attention_1 (there is
//    no FlashAttention-1 kernel here, so such a run measures FA2-style attention), forward or
//    backward (the op name ends in "_bwd"), causal with the plan's
//    sliding window, for head dimensions 64 and 128; for other head dimensions, which the kernels
//    do not support, max(1, round(executed_flops / gemm_flops(shape))) batched GEMMs of its Q·Kᵀ
//    shape (FlashAttention's executed FLOPs at cuBLASLt's GEMM throughput);
//  - kElementwise and kNorm (and the optimizer's and the embedding's memory-bound work): the
//    streaming bf16 kernel of streaming_kernel.h moving the op's bytes.
// The data is synthetic: one arena sized for the largest GEMM, one for the largest attention and one
// pair of buffers for the largest memory-bound op, reused by every op, so running here says nothing about whether the
// plan's memory fits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/workload.h"

struct CUstream_st;

namespace megasim::backend::cuda {

class OpRunner {
 public:
  // Prepares every op of the kernel lists `program`'s compute tasks run (each GEMM shape
  // configured, buffers allocated and filled). Throws DeviceMemoryError (device_memory.h) when the
  // device lacks the memory, CudaError on other CUDA or cuBLASLt failures.
  OpRunner(const models::Workload& workload, const models::StageProgram& program);
  ~OpRunner();
  OpRunner(const OpRunner&) = delete;
  OpRunner& operator=(const OpRunner&) = delete;

  // Enqueues one run of `op` on `stream` (no synchronisation).
  void run(const models::LayerOp& op, CUstream_st* stream);

  // Device bytes the buffers for `program`'s ops take, without allocating.
  static std::size_t device_bytes_for(const models::Workload& workload, const models::StageProgram& program);
  [[nodiscard]] std::size_t device_bytes() const { return device_bytes_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::size_t device_bytes_ = 0;
};

// Whether the task launches any op (a compute task with a non-empty kernel list run at least once).
[[nodiscard]] bool has_ops(const models::Workload& workload, const models::Task& task);

}  // namespace megasim::backend::cuda
