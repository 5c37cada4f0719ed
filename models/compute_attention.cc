// Attention core cost. The unfused path is the sequence of kernels Megatron-LM's CoreAttention
// launches (batched GEMMs plus memory-bound softmax and dropout over b·a·s_q·s_kv scores), each
// costed by the GEMM and memory rooflines; FlashAttention-1 and -2 are each one compute-bound kernel
// per pass with their own efficiency, counting only the (q, k) blocks their masks keep.
//
// FlashAttention-1 (flash-attn 1.x, fmha_fprop_kernel_1xN.h) loops over key blocks outside and
// query blocks inside, starting each key block's query loop at the diagonal when causal
// (`begin = Is_causal ? loop_step_idx * N / M : 0`), so it skips the same masked blocks as FA2. Its
// fp32 partial output (o_tmp) goes to and from memory once per key block: that cost is inside the
// efficiency FA1 is measured at (FlashAttention-2 paper), not added to its bytes here, which are the
// compulsory Q, K, V, O traffic of both kernels (much of o_tmp stays in the A100's 40 MB L2).
#include <algorithm>

#include "models/compute_cost.h"
#include "models/dtype_bytes.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// Bytes per score element of the memory-bound kernels between the two unfused GEMMs (bf16 values,
// a 1-byte dropout mask):
//   forward: fused scale-mask-softmax reads scores, writes probabilities (2 + 2); dropout reads
//            probabilities, writes the dropped copy and the mask (2 + 2 + 1);
//   backward: dropout backward reads the gradient and the mask, writes a gradient (2 + 1 + 2);
//            softmax backward reads the gradient and the probabilities, writes a gradient (2 + 2 + 2).
constexpr double kSoftmaxForwardBytes = 4;
constexpr double kDropoutForwardBytes = 5;
constexpr double kDropoutBackwardBytes = 5;
constexpr double kSoftmaxBackwardBytes = 6;
// FlashAttention-2's backward launches a dot(dO, O) pre-pass, the main kernel and a dQ conversion;
// FlashAttention-1's (flash-attn 1.x fmha_api.cpp mha_bwd, split over keys as at b·a/t < SMs) zeroes
// its fp32 dQ accumulator, runs the kernel and copies dQ out: three as well.
constexpr int kFlashBackwardKernels = 3;

void check(const AttentionShape& s) {
  MEGASIM_ASSERT(s.batch >= 1 && s.heads >= 1 && s.seq_q >= 1 && s.seq_kv >= 1 && s.head_dim >= 1 && s.window >= 0,
                 "attention dimensions must be >= 1 (window >= 0)");
}

double heads_total(const AttentionShape& s) {
  return static_cast<double>(s.batch * s.heads);
}

double score_elements(const AttentionShape& s) {
  return heads_total(s) * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv);
}

double launch_s(const ComputeCalibration& calib) {
  return static_cast<double>(calib.launch_overhead_ns) * 1e-9;
}

double roofline_s(double flops, double efficiency, double bytes, const GpuSpec& gpu, const ComputeCalibration& calib) {
  return std::max(flops / (gpu.peak_bf16_dense_tflops * 1e12 * efficiency),
                  bytes / (gpu.hbm_tbytes_per_s * 1e12 * memory_efficiency_at(bytes, calib)));
}

double unfused_forward_s(const AttentionShape& s, const GpuSpec& gpu, const ComputeCalibration& calib) {
  const std::int64_t bh = s.batch * s.heads;
  double t = gemm_time_s(GemmShape{s.seq_q, s.seq_kv, s.head_dim, bh}, gpu, calib);  // Q·Kᵀ
  t += memory_bound_time_s(score_elements(s) * kSoftmaxForwardBytes, gpu, calib);
  if (s.dropout) t += memory_bound_time_s(score_elements(s) * kDropoutForwardBytes, gpu, calib);
  t += gemm_time_s(GemmShape{s.seq_q, s.head_dim, s.seq_kv, bh}, gpu, calib);  // P·V
  return t;
}

double unfused_backward_s(const AttentionShape& s, const GpuSpec& gpu, const ComputeCalibration& calib) {
  const std::int64_t bh = s.batch * s.heads;
  double t = gemm_time_s(GemmShape{s.seq_kv, s.head_dim, s.seq_q, bh}, gpu, calib);  // dV = Pᵀ·dO
  t += gemm_time_s(GemmShape{s.seq_q, s.seq_kv, s.head_dim, bh}, gpu, calib);        // dP = dO·Vᵀ
  if (s.dropout) t += memory_bound_time_s(score_elements(s) * kDropoutBackwardBytes, gpu, calib);
  t += memory_bound_time_s(score_elements(s) * kSoftmaxBackwardBytes, gpu, calib);
  t += gemm_time_s(GemmShape{s.seq_q, s.head_dim, s.seq_kv, bh}, gpu, calib);  // dQ = dS·K
  t += gemm_time_s(GemmShape{s.seq_kv, s.head_dim, s.seq_q, bh}, gpu, calib);  // dK = dSᵀ·Q
  return t;
}

// Q, K, V read and O written in bf16, plus the fp32 log-sum-exp per query.
double flash_forward_bytes(const AttentionShape& s) {
  const double d = static_cast<double>(s.head_dim);
  const double q = static_cast<double>(s.seq_q);
  const double kv = static_cast<double>(s.seq_kv);
  return heads_total(s) * (kBf16Bytes * d * (2 * q + 2 * kv) + kFp32Bytes * q);
}

// Q, K, V, O, dO read and dQ, dK, dV written in bf16, plus the fp32 dQ accumulator written and read.
double flash_backward_bytes(const AttentionShape& s) {
  const double d = static_cast<double>(s.head_dim);
  const double q = static_cast<double>(s.seq_q);
  const double kv = static_cast<double>(s.seq_kv);
  return heads_total(s) * (kBf16Bytes * d * (4 * q + 4 * kv) + 2 * kFp32Bytes * d * q);
}

double forward_efficiency(AttentionKernel kernel, const ComputeCalibration& calib) {
  return kernel == AttentionKernel::kFlashAttention1 ? calib.flash_attention_1_forward_efficiency
                                                     : calib.flash_attention_forward_efficiency;
}

double backward_efficiency(AttentionKernel kernel, const ComputeCalibration& calib) {
  return kernel == AttentionKernel::kFlashAttention1 ? calib.flash_attention_1_backward_efficiency
                                                     : calib.flash_attention_backward_efficiency;
}

}  // namespace

double attention_score_pairs(const AttentionShape& s, AttentionKernel kernel) {
  check(s);
  if (kernel == AttentionKernel::kUnfused || (!s.causal && s.window == 0)) {
    return static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv);
  }
  // Query i sits at key position p = i + s_kv - s_q and sees keys [lo, hi].
  double pairs = 0;
  for (std::int64_t i = 0; i < s.seq_q; ++i) {
    const std::int64_t p = i + s.seq_kv - s.seq_q;
    const std::int64_t hi = s.causal ? std::min(p, s.seq_kv - 1) : s.seq_kv - 1;
    const std::int64_t lo = s.window > 0 ? std::max<std::int64_t>(0, p - s.window + 1) : 0;
    pairs += static_cast<double>(std::max<std::int64_t>(0, hi - lo + 1));
  }
  return pairs;
}

double attention_forward_flops(const AttentionShape& s, AttentionKernel kernel) {
  return 4.0 * heads_total(s) * static_cast<double>(s.head_dim) * attention_score_pairs(s, kernel);
}

double attention_forward_time_s(const AttentionShape& s, AttentionKernel kernel, const GpuSpec& gpu,
                                const ComputeCalibration& calib) {
  check(s);
  if (kernel == AttentionKernel::kUnfused) return unfused_forward_s(s, gpu, calib);
  return roofline_s(attention_forward_flops(s, kernel), forward_efficiency(kernel, calib), flash_forward_bytes(s), gpu,
                    calib) +
         launch_s(calib);
}

double attention_backward_time_s(const AttentionShape& s, AttentionKernel kernel, const GpuSpec& gpu,
                                 const ComputeCalibration& calib) {
  check(s);
  if (kernel == AttentionKernel::kUnfused) return unfused_backward_s(s, gpu, calib);
  // FA1 and FA2 recompute the scores: five GEMM-sized products against the forward's two (2.5x).
  return roofline_s(2.5 * attention_forward_flops(s, kernel), backward_efficiency(kernel, calib),
                    flash_backward_bytes(s), gpu, calib) +
         kFlashBackwardKernels * launch_s(calib);
}

}  // namespace megasim::models
