// Time of compute ops on one GPU: the roofline of DESIGN.md "Compute" applied to layer_ops.h's ops
// through compute_cost.h: GEMMs by gemm_time_s on their shape; attention by its kernel
// (the kernel of attention_kernel_of(plan): FlashAttention-1 or -2, else Megatron's unfused batched
// GEMMs plus the memory-bound softmax/mask/dropout); elementwise ops and norms by
// memory_bound_time_s. Each op pays the launch overhead once (a FlashAttention backward three
// times: it launches three kernels, see compute_attention.cc). FlashAttention is timed from the
// shape layer_ops.h gives it (s queries, s keys, causal, the plan's window) with compute_cost.h's
// exact count of the (q, k) pairs its masks keep; its backward is the op whose name ends in "_bwd".
#pragma once

#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/layer_ops.h"
#include "models/plan.h"
#include "models/workload.h"

namespace megasim::models {

// Seconds for one op on one GPU.
double op_time_s(const LayerOp& op, const ParallelPlan& plan, const GpuSpec& gpu, const ComputeCalibration& calib);

// Seconds for one run of a kernel list's ops and its host synchronisations (host_syncs x the
// calibration's host_sync_gap; compute only: its TP collectives are timed by the backend, which
// owns the interconnect).
double kernel_list_compute_time_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                                  const ComputeCalibration& calib);

// Seconds of the list's GEMMs alone (OpKind::kGemm: the linear layers; attention kernels are never
// fused with communication): what tensor-parallel communication marked overlappable can hide behind.
double kernel_list_gemm_time_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                               const ComputeCalibration& calib);

// Seconds of the list's attention kernels beside which ring attention's transfers run (the calls
// with OverlapWindow::kAttention): cp - 1 of the attention's cp equal blocks, since the last block
// fetches nothing (Megatron's load-balanced causal split gives every step the same work). 0
// without context parallelism.
double kernel_list_ring_attention_window_s(const KernelList& kernels, const ParallelPlan& plan, const GpuSpec& gpu,
                                           const ComputeCalibration& calib);

}  // namespace megasim::models
