#include "models/op_time.h"

#include <string_view>

#include "sim/error.h"

namespace megasim::models {
namespace {

// layer_ops.h names FlashAttention's backward "flash_attention_bwd" ("flash_attention_1_bwd" for
// FlashAttention-1); its forward (also run again by full recompute) is "flash_attention"
// ("flash_attention_1").
bool is_backward(const LayerOp& op) {
  return std::string_view(op.name).ends_with("_bwd");
}

// FlashAttention op of layer_ops.h: shape {s, attended keys, head dim, micro-batch x heads / tp}.
// The kernel (the plan's, attention_kernel_of) sees s queries against s keys, causal, with the
// plan's sliding window; compute_cost.h counts the (q, k) pairs its masks keep, applies that
// kernel's efficiency and adds its launches (one forward, three backward). A context-parallel
// rank's share (context_split) takes that share of the whole attention's time.
double flash_attention_time_s(const LayerOp& op, const ParallelPlan& plan, const GpuSpec& gpu,
                              const ComputeCalibration& calib) {
  AttentionShape shape;
  shape.batch = op.shape.batch;
  shape.heads = 1;  // the op's batch already folds micro-batch x heads / tp
  shape.seq_q = op.shape.m;
  shape.seq_kv = op.shape.m;
  shape.head_dim = op.shape.k;
  shape.causal = true;
  shape.window = plan.sliding_window_size;
  const AttentionKernel kernel = attention_kernel_of(plan);
  const double whole = is_backward(op) ? attention_backward_time_s(shape, kernel, gpu, calib)
                                       : attention_forward_time_s(shape, kernel, gpu, calib);
  return whole / static_cast<double>(op.context_split);
}

}  // namespace

double op_time_s(const LayerOp& op, const ParallelPlan& plan, const GpuSpec& gpu, const ComputeCalibration& calib) {
  switch (op.kind) {
    case OpKind::kGemm:
      return op.fp8 ? fp8_gemm_time_s(op.shape, gpu, calib) : gemm_time_s(op.shape, gpu, calib);
    case OpKind::kAttention:
      // Unfused: Megatron's batched Q*K^T and P*V products (softmax and dropout are their own
      // elementwise ops in layer_ops), each a batched GEMM of the op's shape.
      if (!uses_flash_kernel(plan)) return gemm_time_s(op.shape, gpu, calib);
      return flash_attention_time_s(op, plan, gpu, calib);
    case OpKind::kElementwise:
    case OpKind::kNorm:
      return memory_bound_time_s(op.bytes, gpu, calib);
  }
  MEGASIM_ASSERT(false, "unknown op kind");
  return 0;
}

double kernel_list_compute_time_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                                  const ComputeCalibration& calib) {
  double total = static_cast<double>(kernels.host_syncs) * static_cast<double>(calib.host_sync_gap_ns) * 1e-9;
  for (const LayerOp& op : kernels.ops) total += op_time_s(op, plan, gpu, calib);
  return total;
}

double kernel_list_gemm_time_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                               const ComputeCalibration& calib) {
  double total = 0;
  for (const LayerOp& op : kernels.ops) {
    if (op.kind == OpKind::kGemm) total += op_time_s(op, plan, gpu, calib);
  }
  return total;
}

double kernel_list_ring_attention_window_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                                           const ComputeCalibration& calib) {
  const auto cp = static_cast<double>(plan.context_parallel_size);
  if (cp <= 1) return 0;
  double attention = 0;
  for (const LayerOp& op : kernels.ops) {
    if (op.kind == OpKind::kAttention) attention += op_time_s(op, plan, gpu, calib);
  }
  return attention * (cp - 1) / cp;
}

}  // namespace megasim::models
