// The compute ops of layer_ops.h run for real on one CPU core in float32 with Eigen (the `cpu`
// backend, DESIGN.md "Real backends"). The data is synthetic; the shapes and bytes are the plan's:
//  - kGemm: `shape.batch` products C[m x n] = A[m x k] * B[k x n];
//  - kAttention without FlashAttention: the same batched product of its shape (Megatron's unfused
//    Q*K^T or P*V; softmax and dropout are their own elementwise ops); with FlashAttention, products
//    of its shape until its executed FLOPs are done (a CPU has no fused attention kernel);
//  - kElementwise and kNorm: a streaming float32 kernel that reads and writes `bytes` in all
//    (y = a * x + b over bytes / 8 elements), so the time is that of moving the op's bytes.
// Buffers are allocated once, for the largest op of the lists, and reused.
#pragma once

#include <span>

#include "models/layer_ops.h"
#include "models/workload.h"

namespace megasim::backend::cpu {

class CpuKernels {
 public:
  // Sizes the buffers for every op of `lists` (and no more).
  explicit CpuKernels(std::span<const models::KernelList> lists);
  // Sizes the buffers for these ops alone.
  explicit CpuKernels(std::span<const models::LayerOp> ops);

  // Runs one op to completion on the calling thread.
  void run(const models::LayerOp& op, bool flash_attention);

  // A value that depends on every output written so far, so that no kernel can be optimised away.
  [[nodiscard]] double checksum() const;
};

}  // namespace megasim::backend::cpu
