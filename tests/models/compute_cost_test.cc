#include "models/compute_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/error.h"

namespace megasim::models {
namespace {

// Rows of ../shared/calibration/gpus.csv, built here so the test does not depend on find_gpu.
GpuSpec a100() {
  return GpuSpec{"A100-SXM-80GB", 312, 80, 2.039, 600, 0.869};
}
GpuSpec h100() {
  return GpuSpec{"H100-SXM-80GB", 989, 80, 3.35, 900, 0.803};
}
GpuSpec h800() {
  return GpuSpec{"H800-SXM-80GB", 989, 80, 3.35, 400, 0};
}

double launch_s(const ComputeCalibration& c) {
  return static_cast<double>(c.launch_overhead_ns) * 1e-9;
}

TEST(ComputeCost, DefaultsFollowTheGpu) {
  const ComputeCalibration a = default_compute_calibration(a100());
  EXPECT_EQ(a.sm_count, 108);
  EXPECT_DOUBLE_EQ(a.best_gemm_efficiency, 0.869);
  EXPECT_DOUBLE_EQ(a.gemm_k_overhead, 312 / 2.039);  // ridge point, FLOP/byte
  EXPECT_EQ(default_compute_calibration(h100()).sm_count, 132);
  EXPECT_DOUBLE_EQ(default_compute_calibration(h800()).best_gemm_efficiency, 0.803);  // H100's, same die
  // NCCL channels (one SM each) of an intra-server collective: two per NVLink (50 GB/s both ways
  // per link), at most 32: A100 12 links -> 24 of 108 SMs, H100 18 -> 32 of 132, H800 8 -> 16.
  EXPECT_DOUBLE_EQ(a.comm_sm_fraction, 24.0 / 108);
  EXPECT_DOUBLE_EQ(default_compute_calibration(h100()).comm_sm_fraction, 32.0 / 132);
  EXPECT_DOUBLE_EQ(default_compute_calibration(h800()).comm_sm_fraction, 16.0 / 132);
  EXPECT_NO_THROW(validate(a));
  ComputeCalibration bad = a;
  bad.comm_sm_fraction = 1.0;
  EXPECT_THROW(validate(bad), sim::ConfigError);
}

// A shape whose tiles fill whole waves exactly (128×256 tiles: 432 × 8 = 3456 = 32 waves of 108 SMs)
// loses nothing to quantization or padding: efficiency = best × k / (k + k_overhead).
TEST(ComputeCost, WholeWavesOfWholeTilesGiveTheKCurve) {
  const ComputeCalibration c = default_compute_calibration(a100());
  const GemmShape shape{128 * 108 * 4, 256 * 8, 4096, 1};
  EXPECT_DOUBLE_EQ(gemm_efficiency(shape, c), 0.869 * 4096.0 / (4096.0 + c.gemm_k_overhead));
}

// Large GEMMs run at the best measured efficiency: wave fill -> 1, k / (k + k0) -> 1.
TEST(ComputeCost, LargeGemmRunsAtBestEfficiency) {
  for (const auto& [gpu, shape] :
       {std::pair{a100(), GemmShape{32768, 32768, 32768, 1}}, std::pair{h100(), GemmShape{32768, 32768, 65536, 1}}}) {
    const ComputeCalibration c = default_compute_calibration(gpu);
    const double ideal = gemm_flops(shape) / (gpu.peak_bf16_dense_tflops * 1e12 * gpu.best_gemm_efficiency);
    EXPECT_NEAR(gemm_time_s(shape, gpu, c), ideal, 0.01 * ideal) << gpu.name;
  }
}

// Doubling a dimension never lowers the curve: waves ceil(2T/S) <= 2·ceil(T/S) so the wave fill
// T/(ceil(T/S)·S) cannot drop; padding m/(ceil(m/t)·t) rises to 1 for powers of two; k/(k+k0) rises;
// a maximum over tiles of non-decreasing functions is non-decreasing.
TEST(ComputeCost, EfficiencyNonDecreasingAcrossPowersOfTwo) {
  for (const GpuSpec& gpu : {a100(), h100()}) {
    const ComputeCalibration c = default_compute_calibration(gpu);
    for (std::int64_t m = 1; m <= 32768; m *= 2) {
      for (std::int64_t n = 1; n <= 32768; n *= 2) {
        for (std::int64_t k = 1; k <= 32768; k *= 2) {
          const double e = gemm_efficiency({m, n, k, 1}, c);
          ASSERT_GT(e, 0);
          ASSERT_LE(e, gpu.best_gemm_efficiency);
          ASSERT_GE(gemm_efficiency({2 * m, n, k, 1}, c), e) << m << "x" << n << "x" << k;
          ASSERT_GE(gemm_efficiency({m, 2 * n, k, 1}, c), e) << m << "x" << n << "x" << k;
          ASSERT_GE(gemm_efficiency({m, n, 2 * k, 1}, c), e) << m << "x" << n << "x" << k;
        }
      }
    }
  }
}

TEST(ComputeCost, SmallDimensionsCostMorePerFlop) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  const auto per_flop = [&](GemmShape s) { return gemm_time_s(s, gpu, c) / gemm_flops(s); };
  const GemmShape big{8192, 8192, 8192, 1};
  EXPECT_GT(per_flop({8192, 8192, 64, 1}), 1.5 * per_flop(big));  // k/(k+153) at k=64 is 0.29
  EXPECT_GT(per_flop({64, 8192, 8192, 1}), 1.5 * per_flop(big));  // 64×128 tiles: 64 tiles for 108 SMs
  EXPECT_GT(per_flop({8192, 64, 8192, 1}), 1.5 * per_flop(big));
}

// A GEMV (m = 1) moves about one byte per FLOP, far below the ridge point: it is memory bound.
TEST(ComputeCost, GemvIsMemoryBound) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  const GemmShape gemv{1, 8192, 8192, 1};
  const double expected = 2.0 * (8192.0 + 8192.0 * 8192.0 + 8192.0) / (2.039e12 * c.memory_efficiency);
  EXPECT_DOUBLE_EQ(gemm_time_s(gemv, gpu, c), expected + launch_s(c));
}

TEST(ComputeCost, MemoryBoundOp) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  const double bytes = 3.0e8;
  EXPECT_DOUBLE_EQ(memory_bound_time_s(bytes, gpu, c), bytes / (2.039e12 * c.memory_efficiency) + launch_s(c));
  EXPECT_DOUBLE_EQ(memory_bound_time_s(0, gpu, c), launch_s(c));
}

// A measured point replaces the curve at its shape and rescales it nearby by the same ratio.
TEST(ComputeCost, MeasuredPointsCorrectTheCurve) {
  ComputeCalibration c = default_compute_calibration(a100());
  const GemmShape at{4096, 4096, 4096, 1};
  const GemmShape near{4096, 8192, 4096, 1};
  const double curve_at = gemm_efficiency(at, c);
  const double curve_near = gemm_efficiency(near, c);
  c.gemm_points.push_back(GemmPoint{4096, 4096, 4096, 0.6});
  EXPECT_DOUBLE_EQ(gemm_efficiency(at, c), 0.6);
  EXPECT_DOUBLE_EQ(gemm_efficiency(near, c), curve_near * 0.6 / curve_at);
}

TEST(ComputeCost, AttentionScorePairs) {
  const double s = 2048;
  AttentionShape shape{1, 8, 2048, 2048, 128, true, 0, true};
  EXPECT_DOUBLE_EQ(attention_score_pairs(shape, AttentionKernel::kUnfused), s * s);  // the mask saves nothing
  EXPECT_DOUBLE_EQ(attention_score_pairs(shape, AttentionKernel::kFlashAttention2), s * (s + 1) / 2);
  shape.window = 512;  // the first 512 queries see 1..512 keys, the rest 512 each
  EXPECT_DOUBLE_EQ(attention_score_pairs(shape, AttentionKernel::kFlashAttention2), 512.0 * 513 / 2 + (s - 512) * 512);
  shape.causal = false;
  shape.window = 0;
  EXPECT_DOUBLE_EQ(attention_score_pairs(shape, AttentionKernel::kFlashAttention2), s * s);
}

// FlashAttention-2 is compute bound at s = 2048 (FLOP/byte ~ s/2): forward time minus the launch is
// FLOPs/(peak × efficiency), so causal costs (s+1)/(2s) of non-causal, and the backward 2.5 x FLOPs.
TEST(ComputeCost, FlashAttentionIsComputeBound) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  AttentionShape causal{4, 8, 2048, 2048, 128, true, 0, true};
  AttentionShape full = causal;
  full.causal = false;
  const double flops_full = 4.0 * 4 * 8 * 128 * 2048.0 * 2048.0;
  const auto fwd = [&](const AttentionShape& s) {
    return attention_forward_time_s(s, AttentionKernel::kFlashAttention2, gpu, c) - launch_s(c);
  };
  EXPECT_DOUBLE_EQ(fwd(full), flops_full / (312e12 * c.flash_attention_forward_efficiency));
  EXPECT_DOUBLE_EQ(fwd(causal) / fwd(full), 2049.0 / 4096.0);
  EXPECT_DOUBLE_EQ(attention_backward_time_s(full, AttentionKernel::kFlashAttention2, gpu, c) - 3 * launch_s(c),
                   2.5 * flops_full / (312e12 * c.flash_attention_backward_efficiency));
}

// FlashAttention-1 defaults: the FA2 paper's "FA1 reaches 25-40% of the A100 peak" and "FA2 about
// 2x faster" with FA2 at 65% / 55%: 32.5% / 27.5%, both in the range; the same ratio on Hopper.
TEST(ComputeCost, FlashAttention1DefaultsAreHalfOfFlashAttention2) {
  const ComputeCalibration a = default_compute_calibration(a100());
  EXPECT_DOUBLE_EQ(a.flash_attention_1_forward_efficiency, 0.325);
  EXPECT_DOUBLE_EQ(a.flash_attention_1_backward_efficiency, 0.275);
  for (double e : {a.flash_attention_1_forward_efficiency, a.flash_attention_1_backward_efficiency}) {
    EXPECT_GE(e, 0.25);
    EXPECT_LE(e, 0.40);
  }
  const ComputeCalibration h = default_compute_calibration(h100());
  EXPECT_DOUBLE_EQ(h.flash_attention_1_forward_efficiency, 0.35 / 2);
  EXPECT_DOUBLE_EQ(h.flash_attention_1_backward_efficiency, 0.30 / 2);
}

// FlashAttention-1 counts the same (q, k) pairs as FA2 (it also stops each query block at the
// diagonal) at its own efficiency: at b·a = 32, s = 2048, d = 128 the compulsory bytes per FLOP are
// tiny (FLOP/byte ~ s/2), so the forward minus its launch is FLOPs / (312 TFLOP/s × 0.325) and the
// backward minus three launches 2.5 × FLOPs / (312 TFLOP/s × 0.275).
TEST(ComputeCost, FlashAttention1IsComputeBoundAtItsEfficiency) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  const AttentionShape causal{4, 8, 2048, 2048, 128, true, 0, true};
  EXPECT_DOUBLE_EQ(attention_score_pairs(causal, AttentionKernel::kFlashAttention1), 2048.0 * 2049 / 2);
  const double flops = 4.0 * 4 * 8 * 128 * (2048.0 * 2049 / 2);
  EXPECT_DOUBLE_EQ(attention_forward_time_s(causal, AttentionKernel::kFlashAttention1, gpu, c) - launch_s(c),
                   flops / (312e12 * 0.325));
  EXPECT_DOUBLE_EQ(attention_backward_time_s(causal, AttentionKernel::kFlashAttention1, gpu, c) - 3 * launch_s(c),
                   2.5 * flops / (312e12 * 0.275));
}

// Directions the mechanisms imply: fusing removes the s² traffic, a sliding window removes FLOPs.
TEST(ComputeCost, AttentionDirections) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  AttentionShape s{1, 8, 2048, 2048, 128, true, 0, true};
  for (auto time : {attention_forward_time_s, attention_backward_time_s}) {
    const double unfused = time(s, AttentionKernel::kUnfused, gpu, c);
    const double flash = time(s, AttentionKernel::kFlashAttention2, gpu, c);
    const double flash1 = time(s, AttentionKernel::kFlashAttention1, gpu, c);
    EXPECT_GT(unfused, flash1);
    EXPECT_GT(flash1, flash);
    AttentionShape windowed = s;
    windowed.window = 512;
    EXPECT_LT(time(windowed, AttentionKernel::kFlashAttention2, gpu, c), flash);
    EXPECT_DOUBLE_EQ(time(windowed, AttentionKernel::kUnfused, gpu, c), unfused);
    AttentionShape no_dropout = s;
    no_dropout.dropout = false;
    EXPECT_LT(time(no_dropout, AttentionKernel::kUnfused, gpu, c), unfused);
  }
}

template <typename Mutate>
void expect_invalid(const std::string& key, Mutate mutate) {
  ComputeCalibration c = default_compute_calibration(a100());
  mutate(c);
  try {
    validate(c);
    ADD_FAILURE() << "no error for " << key;
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key);
  }
}

TEST(ComputeCost, InvalidCalibrationNamesTheKey) {
  expect_invalid("calibration.compute.best_gemm_efficiency", [](auto& c) { c.best_gemm_efficiency = 1.5; });
  expect_invalid("calibration.compute.sm_count", [](auto& c) { c.sm_count = 0; });
  expect_invalid("calibration.compute.gemm_tiles", [](auto& c) { c.gemm_tiles.clear(); });
  expect_invalid("calibration.compute.gemm_tiles", [](auto& c) { c.gemm_tiles[0].relative_efficiency = 0; });
  expect_invalid("calibration.compute.gemm_k_overhead", [](auto& c) { c.gemm_k_overhead = -1; });
  expect_invalid("calibration.compute.gemm_points", [](auto& c) { c.gemm_points.push_back({0, 1, 1, 0.5}); });
  expect_invalid("calibration.compute.memory_efficiency", [](auto& c) { c.memory_efficiency = 0; });
  expect_invalid("calibration.compute.flash_attention_forward_efficiency",
                 [](auto& c) { c.flash_attention_forward_efficiency = 2; });
  expect_invalid("calibration.compute.flash_attention_backward_efficiency",
                 [](auto& c) { c.flash_attention_backward_efficiency = -0.1; });
  expect_invalid("calibration.compute.flash_attention_1_forward_efficiency",
                 [](auto& c) { c.flash_attention_1_forward_efficiency = 0; });
  expect_invalid("calibration.compute.flash_attention_1_backward_efficiency",
                 [](auto& c) { c.flash_attention_1_backward_efficiency = 1.5; });
  expect_invalid("calibration.compute.launch_overhead_ns", [](auto& c) { c.launch_overhead_ns = -1; });
  GpuSpec unknown = a100();
  unknown.name = "MI300X";
  try {
    (void)default_compute_calibration(unknown);
    ADD_FAILURE() << "no error for an unknown GPU";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpu");
  }
}

// Sanity check, not a fit: one layer of the 22B model of Korthikanti et al. 2022 (h=6144, a=64,
// s=2048, TP=8, no sequence parallelism, no recompute) on A100, forward measured at 7.7 ms
// (korthikanti_layer_times.csv). Micro-batch 4: the paper's Table 5 runs 22B with micro-batch 4, and
// 48 layers × 20.3 ms (selective + SP) ≈ 0.97 s of its 1.10 s iteration only fits b = 4. The
// measured time includes the layer's two tensor-parallel all-reduces of s·b·h bf16 values, costed
// here with the measured 8×A100 NVSwitch all-reduce bus bandwidth (230 GB/s, nccl_busbw.csv):
// time = bytes · 2(n-1)/n / busbw. Ops: Megatron's fused LayerNorm, QKV, core attention (unfused),
// output projection, fused bias-dropout-add, LayerNorm, fc1, fused bias-GeLU, fc2, bias-dropout-add.
TEST(ComputeCost, Korthikanti22BLayerForwardSanity) {
  const GpuSpec gpu = a100();
  const ComputeCalibration c = default_compute_calibration(gpu);
  const std::int64_t h = 6144, a = 64, s = 2048, b = 4, t = 8;
  const std::int64_t tokens = s * b;
  const double activations = static_cast<double>(tokens * h);  // elements of one s·b·h tensor
  const double layernorm = memory_bound_time_s(activations * (2 + 2), gpu, c);
  const double bias_dropout_add = memory_bound_time_s(activations * (2 + 2 + 2 + 1), gpu, c);
  const double bias_gelu = memory_bound_time_s(static_cast<double>(tokens * 4 * h / t) * (2 + 2), gpu, c);
  const double gemms = gemm_time_s({tokens, 3 * h / t, h, 1}, gpu, c) + gemm_time_s({tokens, h, h / t, 1}, gpu, c) +
                       gemm_time_s({tokens, 4 * h / t, h, 1}, gpu, c) + gemm_time_s({tokens, h, 4 * h / t, 1}, gpu, c);
  const AttentionShape core{b, a / t, s, s, h / a, true, 0, true};
  const double attention = attention_forward_time_s(core, AttentionKernel::kUnfused, gpu, c);
  const double compute = 2 * layernorm + 2 * bias_dropout_add + bias_gelu + gemms + attention;
  const double all_reduce = activations * 2 * (2.0 * (t - 1) / t) / 230e9;
  const double predicted = compute + 2 * all_reduce;
  std::printf(
      "22B layer forward on A100, TP=8, b=4: GEMMs %.2f ms, attention %.2f ms, elementwise %.2f ms, "
      "compute %.2f ms, + 2 TP all-reduces %.2f ms = %.2f ms vs 7.7 ms measured (%+.0f%%)\n",
      gemms * 1e3, attention * 1e3, (2 * layernorm + 2 * bias_dropout_add + bias_gelu) * 1e3, compute * 1e3,
      2 * all_reduce * 1e3, predicted * 1e3, (predicted / 7.7e-3 - 1) * 100);
  EXPECT_NEAR(predicted, 7.7e-3, 0.25 * 7.7e-3);
}

}  // namespace
}  // namespace megasim::models
