// Per-op compute cost on one GPU (DESIGN.md "Compute"): a roofline with shape-dependent efficiency,
//   time = max(FLOPs / (peak × efficiency(shape)), bytes / (HBM bandwidth × memory_efficiency))
//          + launch_overhead,
// bf16 operands throughout. The efficiencies live in a plain ComputeCalibration: defaults come from
// public numbers (../shared/calibration/gpus.csv and the sources cited in compute_calibration.cc);
// a calibration file measured on real hardware replaces its fields (parsed in scenarios/).
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu_spec.h"

namespace megasim::models {

// A CTA output tile a GEMM kernel may use (cuBLAS picks one per shape), with the fraction of the
// large-GEMM efficiency a kernel with this tile reaches when every SM is busy.
struct GemmTile {
  std::int64_t m = 0;
  std::int64_t n = 0;
  double relative_efficiency = 1.0;
};

// A measured GEMM: achieved FLOP/s over peak for C[m×n] = A[m×k]·B[k×n] in bf16.
struct GemmPoint {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double efficiency = 0;
};

// A measured memory-bound kernel: achieved bandwidth over the memory bandwidth for a kernel that
// moves `bytes` (read + written). Small kernels that stay in cache can beat large streaming ones.
struct MemoryPoint {
  double bytes = 0;
  double efficiency = 0;
};

struct ComputeCalibration {
  // GEMM efficiency curve: best_gemm_efficiency × max over tiles of (tile efficiency × wave
  // quantization over sm_count SMs × tile padding) × k / (k + gemm_k_overhead).
  double best_gemm_efficiency = 0;  // large-GEMM FLOP/s over peak
  std::int64_t sm_count = 0;        // streaming multiprocessors: one output tile per SM per wave
  std::vector<GemmTile> gemm_tiles;
  double gemm_k_overhead = 0;  // per-tile fixed cost (prologue, epilogue), in k steps of the main loop
  // Measured points correct the curve: the curve is scaled by measured/curve at the point nearest
  // in log-shape space. Empty: the curve alone.
  std::vector<GemmPoint> gemm_points;

  // Achievable fraction of HBM bandwidth for streaming elementwise and reduction kernels.
  double memory_efficiency = 0;
  // Measured points replace memory_efficiency: the efficiency of a kernel moving `bytes` is
  // interpolated linearly in log(bytes) between the two nearest points, and is the nearest point's
  // beyond the first or last. Empty: memory_efficiency at every size.
  std::vector<MemoryPoint> memory_points;

  // FlashAttention-2 FLOP/s over peak, head dimension 128 (FLOPs counted as the FA2 benchmark does:
  // forward 4·b·a·s_q·s_kv·d over the computed (q, k) pairs, backward 2.5 × forward).
  double flash_attention_forward_efficiency = 0;
  double flash_attention_backward_efficiency = 0;
  // FlashAttention-1 (flash-attn 1.x, Megatron-LM's --use-flash-attn of 2023), the same FLOP count.
  double flash_attention_1_forward_efficiency = 0;
  double flash_attention_1_backward_efficiency = 0;

  // Host launch and inter-kernel gap paid once per kernel, nanoseconds.
  std::int64_t launch_overhead_ns = 0;
  // The GPU's idle time after a host synchronisation (models/workload.h Task::host_sync): from the
  // end of the work the host waited for to the start of the next kernel it launches, nanoseconds.
  std::int64_t host_sync_gap_ns = 0;
  // The host's get_batch after its synchronisation, while the GPU idles (Megatron-LM's
  // next(data_iterator), broadcast_data and the masks, when data loading is synchronous), ns.
  std::int64_t get_batch_host_ns = 0;

  // FP8 GEMMs' efficiency over the BF16 curve's at the same shape (each against its own peak). 1:
  // the assumption that an FP8 GEMM reaches the fraction of its peak a BF16 one does (no public FP8
  // GEMM measurement in ../shared/calibration); a measured calibration replaces it.
  double fp8_gemm_efficiency_scale = 1;

  // Fraction of the SMs an intra-server NCCL collective occupies while it runs (one CTA per
  // channel): GEMMs running concurrently with it (an overlapped TP collective) lose that share of
  // their throughput for as long as it runs.
  double comm_sm_fraction = 0;
};

// Public defaults for `gpu` (A100, A800, H100, H200, H800 families). Throws sim::ConfigError("cluster.gpu")
// for a GPU whose architecture is not known here.
ComputeCalibration default_compute_calibration(const GpuSpec& gpu);
// Throws sim::ConfigError("calibration.compute.<field>") for out-of-range fields.
void validate(const ComputeCalibration& calib);

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;  // independent GEMMs of this shape in one batched kernel
};

// FLOP/s achieved by the GEMM over peak, in (0, 1]. Without measured points, non-decreasing when any
// dimension doubles and equal to best_gemm_efficiency × k/(k + gemm_k_overhead) for shapes that fill
// whole waves of whole tiles.
double gemm_efficiency(const GemmShape& shape, const ComputeCalibration& calib);
double gemm_flops(const GemmShape& shape);
// bf16 A and B read once, C written once.
double gemm_bytes(const GemmShape& shape);
// FP8 A and B (1 byte) read once, bf16 C written once.
double fp8_gemm_bytes(const GemmShape& shape);
// Seconds for one (batched) GEMM kernel.
double gemm_time_s(const GemmShape& shape, const GpuSpec& gpu, const ComputeCalibration& calib);
// The same GEMM with FP8 inputs (1 byte each, bf16 output): at the GPU's FP8 peak, the efficiency
// curve's value times calib.fp8_gemm_efficiency_scale.
double fp8_gemm_time_s(const GemmShape& shape, const GpuSpec& gpu, const ComputeCalibration& calib);

// The fraction of HBM bandwidth a kernel moving `bytes` achieves (memory_points, else memory_efficiency).
double memory_efficiency_at(double bytes, const ComputeCalibration& calib);

// Seconds for one memory-bound kernel that moves `bytes` to and from HBM.
double memory_bound_time_s(double bytes, const GpuSpec& gpu, const ComputeCalibration& calib);

enum class AttentionKernel : std::uint8_t {
  // Megatron's core attention: batched GEMM Q·Kᵀ writing the full s_q × s_kv scores, fused
  // scale-mask-softmax, dropout, batched GEMM P·V. Masking does not save FLOPs.
  kUnfused,
  // FlashAttention-1 (Dao et al. 2022; flash-attn 1.x): one fused kernel per pass, scores never
  // reach HBM, blocks above the causal diagonal skipped; its own (lower) efficiency.
  kFlashAttention1,
  // FlashAttention-2: one fused kernel, scores never reach HBM, masked blocks skipped.
  kFlashAttention2,
};

// Attention core on one GPU, after the QKV projection and before the output projection.
struct AttentionShape {
  std::int64_t batch = 1;       // micro-batch size
  std::int64_t heads = 1;       // attention heads on this GPU (heads / TP)
  std::int64_t seq_q = 1;       // query positions
  std::int64_t seq_kv = 1;      // key positions
  std::int64_t head_dim = 128;  // hidden / heads
  bool causal = true;
  std::int64_t window = 0;  // sliding-window width in keys (0: unlimited); FlashAttention kernels only
  bool dropout = true;      // attention dropout on the probabilities
};

// (q, k) pairs a kernel evaluates: all s_q·s_kv for the unfused kernel; for FlashAttention-1 and -2
// only those a causal and/or sliding-window mask keeps (query i, aligned to the end of the keys,
// sees keys in (i - window, i]).
double attention_score_pairs(const AttentionShape& shape, AttentionKernel kernel);
// GEMM FLOPs of the forward: Q·Kᵀ and P·V, 2 FLOPs per multiply-add each.
double attention_forward_flops(const AttentionShape& shape, AttentionKernel kernel);
double attention_forward_time_s(const AttentionShape& shape, AttentionKernel kernel, const GpuSpec& gpu,
                                const ComputeCalibration& calib);
double attention_backward_time_s(const AttentionShape& shape, AttentionKernel kernel, const GpuSpec& gpu,
                                 const ComputeCalibration& calib);

}  // namespace megasim::models
