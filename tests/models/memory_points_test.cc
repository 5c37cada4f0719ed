// Measured memory-bound points (compute_cost.h MemoryPoint): the efficiency of a kernel moving
// `bytes` is interpolated linearly in log(bytes) between the two nearest points, is the nearest
// point's beyond the ends, and is memory_efficiency when there are no points. Expected values are
// worked out by hand from that rule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// A calibration with no wave, tile or k losses, so that a GEMM's compute time is FLOPs / peak.
ComputeCalibration flat_calibration(double memory_efficiency, std::vector<MemoryPoint> points) {
  ComputeCalibration c;
  c.best_gemm_efficiency = 1.0;
  c.sm_count = 1;
  c.gemm_tiles = {{1, 1, 1.0}};
  c.gemm_k_overhead = 0;
  c.memory_efficiency = memory_efficiency;
  c.memory_points = std::move(points);
  c.flash_attention_forward_efficiency = 1.0;
  c.flash_attention_backward_efficiency = 1.0;
  c.flash_attention_1_forward_efficiency = 1.0;
  c.flash_attention_1_backward_efficiency = 1.0;
  c.launch_overhead_ns = 0;
  c.comm_sm_fraction = 0;
  return c;
}

// 100 TFLOP/s, 1 TB/s: round numbers for the expected times.
GpuSpec round_gpu() {
  return GpuSpec{"round", 100, 80, 1.0, 400, 0};
}

std::string thrown_key(const ComputeCalibration& c) {
  try {
    validate(c);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

TEST(MemoryPoints, WithoutPointsEverySizeGetsMemoryEfficiency) {
  const ComputeCalibration c = flat_calibration(0.85, {});
  for (const double bytes : {0.0, 1.0, 4096.0, 1e9, 1e15}) EXPECT_DOUBLE_EQ(memory_efficiency_at(bytes, c), 0.85);
  // The public defaults carry no points.
  const ComputeCalibration a100 = default_compute_calibration(GpuSpec{"A100-SXM-80GB", 312, 80, 2.039, 600, 0.869});
  EXPECT_TRUE(a100.memory_points.empty());
  EXPECT_DOUBLE_EQ(memory_efficiency_at(1e6, a100), a100.memory_efficiency);
}

// Points at 1 kB (0.9) and 1 MB (0.6), given in reverse order: log10(bytes) runs from 3 to 6, so
// 10 kB is a third of the way (0.9 - 0.3/3 = 0.8), 100 kB two thirds (0.7), and the geometric
// mean 10^4.5 half way (0.75).
TEST(MemoryPoints, InterpolatesLinearlyInLogBytes) {
  const ComputeCalibration c = flat_calibration(0.1, {{1e6, 0.6}, {1e3, 0.9}});
  EXPECT_NEAR(memory_efficiency_at(1e3, c), 0.9, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(1e6, c), 0.6, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(1e4, c), 0.8, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(1e5, c), 0.7, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(std::pow(10.0, 4.5), c), 0.75, 1e-12);
}

TEST(MemoryPoints, BeyondTheEndsTheNearestPointHolds) {
  const ComputeCalibration c = flat_calibration(0.1, {{1e6, 0.6}, {1e3, 0.9}});
  EXPECT_DOUBLE_EQ(memory_efficiency_at(999, c), 0.9);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(1, c), 0.9);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(0, c), 0.9);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(1e6 + 1, c), 0.6);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(1e12, c), 0.6);
  // One point: its efficiency at every size.
  const ComputeCalibration one = flat_calibration(0.1, {{4096, 0.5}});
  for (const double bytes : {0.0, 64.0, 4096.0, 1e9}) EXPECT_DOUBLE_EQ(memory_efficiency_at(bytes, one), 0.5);
}

// With three points only the two around a size matter: 1 kB 0.5, 100 kB 1.0, 10 MB 0.7 (listed out
// of order). 10 kB is half way (in log) from 1 kB to 100 kB: 0.75; 1 MB half way from 100 kB to
// 10 MB: 0.85. Interpolating the end points instead would give 0.5 + 0.2/4 = 0.55 and 0.65.
TEST(MemoryPoints, OnlyTheTwoNearestPointsCount) {
  const ComputeCalibration c = flat_calibration(0.1, {{1e7, 0.7}, {1e3, 0.5}, {1e5, 1.0}});
  EXPECT_NEAR(memory_efficiency_at(1e4, c), 0.75, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(1e6, c), 0.85, 1e-12);
  EXPECT_NEAR(memory_efficiency_at(1e5, c), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(1e8, c), 0.7);
  EXPECT_DOUBLE_EQ(memory_efficiency_at(10, c), 0.5);
}

// memory_bound_time_s = bytes / (bandwidth x efficiency at bytes) + launch overhead.
TEST(MemoryPoints, MemoryBoundTimeUsesTheInterpolatedEfficiency) {
  ComputeCalibration c = flat_calibration(0.1, {{1e3, 0.9}, {1e6, 0.6}});
  c.launch_overhead_ns = 4'000;
  const GpuSpec gpu = round_gpu();  // 1e12 B/s
  EXPECT_NEAR(memory_bound_time_s(1e4, gpu, c), 1e4 / (1e12 * 0.8) + 4e-6, 1e-18);
  EXPECT_NEAR(memory_bound_time_s(1e6, gpu, c), 1e6 / (1e12 * 0.6) + 4e-6, 1e-18);
  EXPECT_NEAR(memory_bound_time_s(1e9, gpu, c), 1e9 / (1e12 * 0.6) + 4e-6, 1e-15);
  EXPECT_NEAR(memory_bound_time_s(100, gpu, c), 100 / (1e12 * 0.9) + 4e-6, 1e-18);
  // Without points: memory_efficiency.
  c.memory_points.clear();
  EXPECT_NEAR(memory_bound_time_s(1e6, gpu, c), 1e6 / (1e12 * 0.1) + 4e-6, 1e-15);
}

// The memory term of a GEMM uses the efficiency at the GEMM's bytes. 1 x 4096 x 4096 moves
// B = 2 (4096 + 4096² + 4096) bytes for 2·4096² FLOPs: 0.34 µs at 100 TFLOP/s against tens of µs at
// 1 TB/s, so it is memory-bound. Points at B/10 (0.4) and 10 B (0.8) put B half way in log: 0.6.
TEST(MemoryPoints, GemmMemoryTermUsesThePoints) {
  const double b = 2.0 * (4096.0 + 4096.0 * 4096.0 + 4096.0);
  ComputeCalibration c = flat_calibration(0.1, {{b / 10, 0.4}, {b * 10, 0.8}});
  c.launch_overhead_ns = 2'000;
  const GpuSpec gpu = round_gpu();
  const GemmShape thin{1, 4096, 4096, 1};
  ASSERT_DOUBLE_EQ(gemm_bytes(thin), b);
  EXPECT_NEAR(gemm_time_s(thin, gpu, c), b / (1e12 * 0.6) + 2e-6, 1e-15);
  // Without points the same GEMM streams at memory_efficiency 0.1.
  c.memory_points.clear();
  EXPECT_NEAR(gemm_time_s(thin, gpu, c), b / (1e12 * 0.1) + 2e-6, 1e-15);

  // 4096³ needs 1.37 ms of compute (2·4096³ FLOPs at 100 TFLOP/s) and moves 3·4096²·2 bytes: 10 ms
  // at a point of 1% of 1 TB/s (memory-bound), 0.2 ms at 50% (compute-bound).
  c.memory_points = {{1, 0.01}};
  const GemmShape big{4096, 4096, 4096, 1};
  EXPECT_NEAR(gemm_time_s(big, gpu, c), 3.0 * 4096 * 4096 * 2 / 1e10 + 2e-6, 1e-12);
  c.memory_points = {{1, 0.5}};
  EXPECT_NEAR(gemm_time_s(big, gpu, c), 2.0 * 4096 * 4096 * 4096 / 1e14 + 2e-6, 1e-12);
}

TEST(MemoryPoints, ValidateRejectsBadPoints) {
  const std::string key = "calibration.compute.memory_points";
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, 0.9}, {1e6, 1.0}})), "(no error)");
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, 0.9}, {0, 0.5}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{-1, 0.5}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{std::numeric_limits<double>::infinity(), 0.5}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{std::numeric_limits<double>::quiet_NaN(), 0.5}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, 0}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, -0.5}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, 1.0001}})), key);
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{1e3, std::numeric_limits<double>::quiet_NaN()}})), key);
  // The smallest positive size and an efficiency of exactly 1 are in range.
  EXPECT_EQ(thrown_key(flat_calibration(0.85, {{std::numeric_limits<double>::denorm_min(), 1.0}})), "(no error)");
}

}  // namespace
}  // namespace megasim::models
