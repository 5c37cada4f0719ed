// The compute ops of layer_ops.h run for real on one CPU core in float32 with Eigen (the `cpu`
// backend, DESIGN.md "Real backends"). The data is synthetic; the shapes and bytes are the plan's:
//  - kGemm: `shape.batch` products C[m x n] = A[m x k] * B[k x n], each on its own A, B and C;
//  - kAttention without FlashAttention: the same batched product of its shape (Megatron's unfused
//    Q*K^T or P*V; softmax and dropout are their own elementwise ops); with FlashAttention, products
//    of its shape until its executed FLOPs are done (a CPU has no fused attention kernel):
//    max(1, round(executed_flops / gemm_flops(shape))) batched products;
//  - kElementwise and kNorm: a streaming float32 kernel that reads and writes `bytes` in all
//    (y = a * x + b over n = max(1, bytes / 8) elements), so the time is that of moving the op's
//    bytes.
// Buffers are allocated once, for the largest op of the lists, and reused: run() never allocates,
// and an op larger than the buffers is a programming error (MEGASIM_ASSERT). Inputs hold small
// fixed values (no denormals or NaNs), so a kernel's time does not depend on the data. Single
// threaded: the caller decides placement (one process per core).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/layer_ops.h"
#include "models/workload.h"

namespace megasim::backend::cpu {

class CpuKernels {
 public:
  // The streaming kernel's y = kStreamScale * x + kStreamShift.
  static constexpr float kStreamScale = 0.5F;
  static constexpr float kStreamShift = 0.25F;

  // Sizes the buffers for every op of `lists` (and no more).
  explicit CpuKernels(std::span<const models::KernelList> lists);
  // Sizes the buffers for these ops alone.
  explicit CpuKernels(std::span<const models::LayerOp> ops);

  // Runs one op to completion on the calling thread.
  void run(const models::LayerOp& op, bool flash_attention);

  // A value that depends on every output written so far, so that no kernel can be optimised away:
  // the sum, over every pass run so far (each product of a batched GEMM, each streaming kernel), of
  // the last element that pass wrote.
  [[nodiscard]] double checksum() const { return checksum_; }

  // For tests, views of what the last run() read and wrote (empty before the first run).
  // GEMM and attention: operand 0 is A and operand 1 is B, `batch` consecutive column-major
  // slices A[m x k] and B[k x n]; the output is the `batch` column-major slices C[m x n].
  // Streaming op: operand 0 is x (n elements), operand 1 is empty, the output is y (n elements).
  [[nodiscard]] std::span<const float> last_input(int operand) const;
  [[nodiscard]] std::span<const float> last_output() const { return last_output_; }

 private:
  // Elements of each buffer; every buffer is then filled (inputs with the fixed pattern).
  void allocate(std::int64_t a_elements, std::int64_t b_elements, std::int64_t c_elements, std::int64_t stream_size);
  void run_gemm(const models::GemmShape& shape, std::int64_t count);
  void run_stream(double bytes);

  // GEMM operands: batch element i uses the slices at i*m*k, i*k*n and i*m*n.
  std::vector<float> a_;
  std::vector<float> b_;
  std::vector<float> c_;
  // Streaming kernel: y_ = kStreamScale * x_ + kStreamShift.
  std::vector<float> x_;
  std::vector<float> y_;

  std::span<const float> last_a_;
  std::span<const float> last_b_;
  std::span<const float> last_output_;
  double checksum_ = 0;
};

}  // namespace megasim::backend::cpu
