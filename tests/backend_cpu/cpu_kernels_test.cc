#include "backend/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_timing.h"
#include "models/compute_cost.h"
#include "models/layer_ops.h"
#include "models/workload.h"

namespace megasim::backend::cpu {
namespace {

using models::GemmShape;
using models::LayerOp;
using models::OpKind;

LayerOp gemm_op(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, OpKind kind = OpKind::kGemm) {
  LayerOp op;
  op.name = "gemm";
  op.kind = kind;
  op.shape = GemmShape{m, n, k, batch};
  op.flops = models::gemm_flops(op.shape);
  op.executed_flops = op.flops;
  op.bytes = models::gemm_bytes(op.shape);
  return op;
}

LayerOp streaming_op(double bytes, OpKind kind = OpKind::kElementwise) {
  LayerOp op;
  op.name = "streaming";
  op.kind = kind;
  op.bytes = bytes;
  return op;
}

std::size_t at(std::int64_t index) {
  return static_cast<std::size_t>(index);
}

// C[m x n] = A[m x k] * B[k x n], column-major, by the definition, in double.
std::vector<double> naive_product(std::span<const float> a, std::span<const float> b, std::int64_t m, std::int64_t n,
                                  std::int64_t k) {
  std::vector<double> c(at(m * n), 0.0);
  for (std::int64_t col = 0; col < n; ++col) {
    for (std::int64_t row = 0; row < m; ++row) {
      double sum = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        sum += static_cast<double>(a[at(i * m + row)]) * static_cast<double>(b[at(col * k + i)]);
      }
      c[at(col * m + row)] = sum;
    }
  }
  return c;
}

// Checks every batch element of the last run's output against the naive product of its own slices.
void expect_batched_product(const CpuKernels& kernels, const GemmShape& s) {
  const std::span<const float> a = kernels.last_input(0);
  const std::span<const float> b = kernels.last_input(1);
  const std::span<const float> c = kernels.last_output();
  ASSERT_EQ(std::ssize(a), s.batch * s.m * s.k);
  ASSERT_EQ(std::ssize(b), s.batch * s.k * s.n);
  ASSERT_EQ(std::ssize(c), s.batch * s.m * s.n);
  for (std::int64_t e = 0; e < s.batch; ++e) {
    const std::vector<double> expected = naive_product(a.subspan(at(e * s.m * s.k), at(s.m * s.k)),
                                                       b.subspan(at(e * s.k * s.n), at(s.k * s.n)), s.m, s.n, s.k);
    double magnitude = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(c[at(e * s.m * s.n) + i], expected[i], 1e-5) << "batch element " << e << ", element " << i;
      magnitude += std::abs(expected[i]);
    }
    EXPECT_GT(magnitude, 0) << "batch element " << e << ": a zero product would not test anything";
  }
}

TEST(CpuKernels, GemmMatchesNaiveProduct) {
  const LayerOp op = gemm_op(5, 7, 3, 1);
  CpuKernels kernels(std::span<const LayerOp>(&op, 1));
  kernels.run(op, false);
  expect_batched_product(kernels, op.shape);
}

TEST(CpuKernels, BatchedGemmWritesEveryBatchElement) {
  // The larger op runs first and fills the output buffer with other values: each batch element of
  // the second op must then overwrite its own slice with the product of its own A and B slices.
  const std::vector<LayerOp> ops = {gemm_op(9, 8, 7, 4), gemm_op(4, 6, 5, 3)};
  CpuKernels kernels(ops);
  kernels.run(ops[0], false);
  kernels.run(ops[1], false);
  expect_batched_product(kernels, ops[1].shape);

  // Distinct slices per batch element: A differs between batch elements 0 and 1.
  const std::span<const float> a = kernels.last_input(0);
  const std::vector<float> a0(a.begin(), a.begin() + 20);
  const std::vector<float> a1(a.begin() + 20, a.begin() + 40);
  EXPECT_NE(a0, a1);
}

TEST(CpuKernels, UnfusedAttentionIsTheGemmOfItsShape) {
  const std::vector<LayerOp> ops = {gemm_op(6, 6, 4, 2, OpKind::kAttention)};
  CpuKernels kernels(ops);
  kernels.run(ops[0], false);
  expect_batched_product(kernels, ops[0].shape);
}

TEST(CpuKernels, FlashAttentionRunsProductsUntilItsExecutedFlops) {
  LayerOp op = gemm_op(6, 5, 4, 2, OpKind::kAttention);
  CpuKernels kernels(std::span<const LayerOp>(&op, 1));
  // The checksum adds the last output element of every product run: one batched product adds
  // `delta`, and the inputs are fixed, so every batched product adds the same.
  kernels.run(op, false);
  const double delta = kernels.checksum();
  ASSERT_NE(delta, 0);

  op.executed_flops = 3 * models::gemm_flops(op.shape);
  kernels.run(op, true);
  EXPECT_DOUBLE_EQ(kernels.checksum(), 4 * delta);
  expect_batched_product(kernels, op.shape);

  // Fewer executed FLOPs than one product still run one (max(1, round(...))).
  op.executed_flops = 0.2 * models::gemm_flops(op.shape);
  kernels.run(op, true);
  EXPECT_DOUBLE_EQ(kernels.checksum(), 5 * delta);

  // 2.4 products round to 2.
  op.executed_flops = 2.4 * models::gemm_flops(op.shape);
  kernels.run(op, true);
  EXPECT_DOUBLE_EQ(kernels.checksum(), 7 * delta);
}

TEST(CpuKernels, StreamingKernelComputesScaleShiftOnBytesOverEightElements) {
  const std::vector<LayerOp> ops = {streaming_op(8000), streaming_op(8007, OpKind::kNorm), streaming_op(3)};
  CpuKernels kernels(ops);
  const std::int64_t expected_elements[] = {1000, 1000, 1};
  for (std::size_t o = 0; o < ops.size(); ++o) {
    kernels.run(ops[o], false);
    const std::span<const float> x = kernels.last_input(0);
    const std::span<const float> y = kernels.last_output();
    ASSERT_EQ(std::ssize(x), expected_elements[o]) << ops[o].bytes << " bytes";
    ASSERT_EQ(std::ssize(y), expected_elements[o]) << ops[o].bytes << " bytes";
    EXPECT_TRUE(kernels.last_input(1).empty());
    for (std::size_t i = 0; i < y.size(); ++i) {
      EXPECT_FLOAT_EQ(y[i], CpuKernels::kStreamScale * x[i] + CpuKernels::kStreamShift) << "element " << i;
    }
  }
}

TEST(CpuKernels, InputsAreSmallFiniteAndVaried) {
  const std::vector<LayerOp> ops = {gemm_op(64, 64, 64, 1), streaming_op(4096)};
  CpuKernels kernels(ops);
  for (const LayerOp& op : ops) {
    kernels.run(op, false);
    const std::span<const float> x = kernels.last_input(0);
    float lowest = x[0];
    float highest = x[0];
    for (const float v : x) {
      ASSERT_TRUE(std::isfinite(v));
      EXPECT_LE(std::abs(v), 1.0F);
      EXPECT_TRUE(v == 0 || std::isnormal(v));
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
    }
    EXPECT_LT(lowest, highest) << op.name;
  }
}

TEST(CpuKernels, ChecksumChangesAfterEachRun) {
  const std::vector<LayerOp> ops = {gemm_op(16, 16, 16, 2), streaming_op(1024)};
  CpuKernels kernels(ops);
  EXPECT_EQ(kernels.checksum(), 0);
  double previous = kernels.checksum();
  for (int round = 0; round < 2; ++round) {
    for (const LayerOp& op : ops) {
      kernels.run(op, false);
      EXPECT_NE(kernels.checksum(), previous) << op.name;
      previous = kernels.checksum();
    }
  }
}

TEST(CpuKernels, SizedForEveryOpOfTheKernelLists) {
  std::vector<models::KernelList> lists(2);
  lists[0].ops = {gemm_op(8, 4, 2, 1), streaming_op(64)};
  lists[1].ops = {gemm_op(3, 3, 3, 5, OpKind::kAttention), streaming_op(512, OpKind::kNorm)};
  CpuKernels kernels(lists);
  for (const models::KernelList& list : lists) {
    for (const LayerOp& op : list.ops) {
      kernels.run(op, true);
      if (op.kind == OpKind::kElementwise || op.kind == OpKind::kNorm) {
        EXPECT_EQ(std::ssize(kernels.last_output()), static_cast<std::int64_t>(op.bytes) / 8);
      } else {
        expect_batched_product(kernels, op.shape);
      }
    }
  }
}

TEST(CpuKernelsDeathTest, OpLargerThanTheBuffersAborts) {
  const LayerOp small = gemm_op(4, 4, 4, 1);
  CpuKernels kernels(std::span<const LayerOp>(&small, 1));
  EXPECT_DEATH(kernels.run(gemm_op(4, 4, 4, 2), false), "larger than the ops CpuKernels was sized for");
  EXPECT_DEATH(kernels.run(streaming_op(64), false), "larger than the ops CpuKernels was sized for");
}

// Few short runs: the test machine is shared, so the bounds are far from the expected values.
constexpr TimingOptions kQuick{.repetitions = 3, .min_run_s = 0.005};

models::LayerOp gemm_op(const GemmShape& shape) {
  models::LayerOp op;
  op.name = "gemm";
  op.kind = models::OpKind::kGemm;
  op.shape = shape;
  op.flops = models::gemm_flops(shape);
  op.executed_flops = op.flops;
  op.bytes = models::gemm_bytes(shape);
  return op;
}

models::LayerOp stream_op(double bytes) {
  models::LayerOp op;
  op.name = "stream";
  op.kind = models::OpKind::kElementwise;
  op.bytes = bytes;
  return op;
}

// The fastest of a few timings of a two-op sequence: on a shared machine, preemption only adds
// time, and both ops of a pass see the same load.
std::pair<double, double> best_pair_s(const models::LayerOp& first, const models::LayerOp& second) {
  SequenceTimer timer({first, second});
  double first_s = std::numeric_limits<double>::infinity();
  double second_s = std::numeric_limits<double>::infinity();
  for (int round = 0; round < 4; ++round) {
    const std::vector<double> s = timer.time(3);
    first_s = std::min(first_s, s.at(0));
    second_s = std::min(second_s, s.at(1));
  }
  return {first_s, second_s};
}

TEST(CpuTiming, GemmTimeGrowsWithFlops) {
  const auto [small_s, large_s] = best_pair_s(gemm_op({256, 256, 256, 1}), gemm_op({512, 512, 512, 1}));
  EXPECT_GT(small_s, 0);
  // 8x the FLOPs: a time ratio near 8 (a bit less if the larger GEMM is more efficient).
  EXPECT_GT(large_s / small_s, 3.0) << small_s << " s vs " << large_s << " s";
  EXPECT_LT(large_s / small_s, 40.0) << small_s << " s vs " << large_s << " s";
}

TEST(CpuTiming, BatchedGemmTimeGrowsWithTheBatch) {
  const auto [one_s, eight_s] = best_pair_s(gemm_op({128, 128, 128, 1}), gemm_op({128, 128, 128, 8}));
  // 8 products of the same shape: a time ratio near 8.
  EXPECT_GT(eight_s / one_s, 3.0) << one_s << " s vs " << eight_s << " s";
  EXPECT_LT(eight_s / one_s, 40.0) << one_s << " s vs " << eight_s << " s";
}

TEST(CpuTiming, MemoryOpTimeGrowsWithBytes) {
  const auto [small_s, large_s] = best_pair_s(stream_op(1e6), stream_op(64e6));
  // 64x the bytes, and 1 MB stays in cache while 64 MB streams from DRAM: well above 4x.
  EXPECT_GT(large_s / small_s, 4.0) << small_s << " s vs " << large_s << " s";
}

// One time per op of the sequence, in its order, whatever the number of passes; an op that occurs
// twice is timed at each place.
TEST(CpuTiming, SequenceTimerTimesEveryOpInOrder) {
  SequenceTimer timer({stream_op(64e6), gemm_op({64, 64, 64, 1}), stream_op(64e6)});
  EXPECT_EQ(timer.sequence().size(), 3U);
  for (const int passes : {1, 2, 5}) {
    const std::vector<double> s = timer.time(passes);
    ASSERT_EQ(s.size(), 3U);
    for (const double t : s) EXPECT_GT(t, 0);
    // A 64 MB stream takes milliseconds, a 64^3 product (half a million FLOPs) microseconds.
    EXPECT_GT(s[0], s[1]) << passes;
    EXPECT_GT(s[2], s[1]) << passes;
  }
}

TEST(CpuTiming, OpOverheadIsPositiveAndSmall) {
  const double overhead_s = time_op_overhead_s(kQuick);
  EXPECT_GT(overhead_s, 0);
  // A call and an 8-element loop: nanoseconds; a millisecond would mean a sleep or an allocation.
  EXPECT_LT(overhead_s, 1e-3);
  SequenceTimer megabyte({stream_op(1e6)});
  EXPECT_LT(overhead_s, megabyte.time(3).front());
}

}  // namespace
}  // namespace megasim::backend::cpu
