// op_time_s against the roofline of DESIGN.md "Compute" written out by hand for each op kind:
// time = max(FLOPs / (peak x efficiency), bytes / (HBM bandwidth x memory efficiency)) + launch.
#include "models/op_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/layer_ops.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

struct Fixture {
  GpuSpec gpu = find_gpu("A100");
  ComputeCalibration calib = default_compute_calibration(find_gpu("A100"));
  double peak() const { return gpu.peak_bf16_dense_tflops * 1e12; }
  double bandwidth() const { return gpu.hbm_tbytes_per_s * 1e12 * calib.memory_efficiency; }
  double launch() const { return static_cast<double>(calib.launch_overhead_ns) * 1e-9; }
};

// One 22B layer on 8 GPUs (Korthikanti Table 4), micro-batch 1, with `change` applied.
ResolvedPlan plan_22b(void (*change)(ParallelPlan&) = [](ParallelPlan&) {}) {
  ParallelPlan p = testing::plan_of(testing::gpt_22b(), 8, 1, 0, 1, 1);
  change(p);
  return resolve_plan(testing::gpt_22b(), p, 8, 8);
}

const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& op) { return op.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

TEST(OpTime, GemmIsTheRooflineOfItsShape) {
  const Fixture f;
  const ResolvedPlan plan = plan_22b();
  for (const LayerOp& op : layer_ops(testing::gpt_22b(), plan, Pass::kForward)) {
    if (op.kind != OpKind::kGemm && op.kind != OpKind::kAttention) continue;
    const GemmShape& g = op.shape;
    const double flops = 2.0 * static_cast<double>(g.m * g.n * g.k * g.batch);
    const double bytes = 2.0 * static_cast<double>(g.batch * (g.m * g.k + g.k * g.n + g.m * g.n));
    const double expected =
        std::max(flops / (f.peak() * gemm_efficiency(g, f.calib)), bytes / f.bandwidth()) + f.launch();
    EXPECT_DOUBLE_EQ(op_time_s(op, plan.plan, f.gpu, f.calib), expected) << op.name;  // unfused attention too
  }
}

TEST(OpTime, ElementwiseAndNormsAreMemoryBound) {
  const Fixture f;
  const ResolvedPlan plan = plan_22b();
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const LayerOp& op : layer_ops(testing::gpt_22b(), plan, pass)) {
      if (op.kind != OpKind::kElementwise && op.kind != OpKind::kNorm) continue;
      EXPECT_DOUBLE_EQ(op_time_s(op, plan.plan, f.gpu, f.calib), op.bytes / f.bandwidth() + f.launch()) << op.name;
    }
  }
}

// FlashAttention-2 on batch x heads/t = 8 attention matrices of s = 2048, d = 96: the causal
// kernel evaluates s(s+1)/2 (q, k) pairs; forward 4 FLOPs per pair and head dimension, backward
// 2.5x; bytes: Q, K, V, O (+ dO, dQ, dK, dV and the fp32 dQ accumulator in backward) and the fp32
// log-sum-exp; backward launches three kernels.
TEST(OpTime, FlashAttentionCountsTheCausalPairs) {
  const Fixture f;
  const ResolvedPlan plan = plan_22b([](ParallelPlan& p) { p.use_flash_attention = true; });
  const double s = 2048, d = 96, heads = 64.0 / 8;  // d = 6144 / 64
  const double pairs = s * (s + 1) / 2;
  const double flops = 4 * heads * d * pairs;
  const double forward_bytes = heads * (2 * d * 4 * s + 4 * s);
  const double backward_bytes = heads * (2 * d * 8 * s + 8 * d * s);
  const auto forward = layer_ops(testing::gpt_22b(), plan, Pass::kForward);
  const auto backward = layer_ops(testing::gpt_22b(), plan, Pass::kBackward);
  EXPECT_DOUBLE_EQ(
      op_time_s(op_named(forward, "flash_attention"), plan.plan, f.gpu, f.calib),
      std::max(flops / (f.peak() * f.calib.flash_attention_forward_efficiency), forward_bytes / f.bandwidth()) +
          f.launch());
  EXPECT_DOUBLE_EQ(
      op_time_s(op_named(backward, "flash_attention_bwd"), plan.plan, f.gpu, f.calib),
      std::max(2.5 * flops / (f.peak() * f.calib.flash_attention_backward_efficiency), backward_bytes / f.bandwidth()) +
          3 * f.launch());
}

// FlashAttention-1 (plan.attention_kernel): the same causal pairs, bytes and launches as FA2 above,
// at FA1's A100 efficiencies (half FA2's 65% / 55%: 32.5% forward, 27.5% backward); the unfused
// layer ops (qkv_bias and its neighbours) stay, as Megatron's --use-flash-attn leaves them.
TEST(OpTime, FlashAttention1IsTheRooflineAtItsEfficiency) {
  const Fixture f;
  const ResolvedPlan plan = plan_22b([](ParallelPlan& p) { p.attention_kernel = AttentionKernel::kFlashAttention1; });
  const double s = 2048, d = 96, heads = 64.0 / 8;
  const double flops = 4 * heads * d * (s * (s + 1) / 2);
  const double forward_bytes = heads * (2 * d * 4 * s + 4 * s);
  const double backward_bytes = heads * (2 * d * 8 * s + 8 * d * s);
  const auto forward = layer_ops(testing::gpt_22b(), plan, Pass::kForward);
  const auto backward = layer_ops(testing::gpt_22b(), plan, Pass::kBackward);
  EXPECT_DOUBLE_EQ(op_time_s(op_named(forward, "flash_attention_1"), plan.plan, f.gpu, f.calib),
                   std::max(flops / (f.peak() * 0.325), forward_bytes / f.bandwidth()) + f.launch());
  EXPECT_DOUBLE_EQ(op_time_s(op_named(backward, "flash_attention_1_bwd"), plan.plan, f.gpu, f.calib),
                   std::max(2.5 * flops / (f.peak() * 0.275), backward_bytes / f.bandwidth()) + 3 * f.launch());
  op_named(forward, "qkv_bias");
}

// A window of w keys: query i sees min(i + 1, w) keys, w(w+1)/2 + (s - w) w pairs in all.
TEST(OpTime, SlidingWindowShortensFlashAttention) {
  const Fixture f;
  const ResolvedPlan plan = plan_22b([](ParallelPlan& p) {
    p.use_flash_attention = true;
    p.sliding_window_size = 512;
  });
  const double s = 2048, d = 96, heads = 8, w = 512;
  const double flops = 4 * heads * d * (w * (w + 1) / 2 + (s - w) * w);
  const double bytes = heads * (2 * d * 4 * s + 4 * s);
  const std::vector<LayerOp> forward = layer_ops(testing::gpt_22b(), plan, Pass::kForward);
  const LayerOp& op = op_named(forward, "flash_attention");
  EXPECT_DOUBLE_EQ(
      op_time_s(op, plan.plan, f.gpu, f.calib),
      std::max(flops / (f.peak() * f.calib.flash_attention_forward_efficiency), bytes / f.bandwidth()) + f.launch());
}

TEST(OpTime, KernelListTimeIsTheSumOfItsOps) {
  const Fixture f;
  for (bool flash : {false, true}) {
    const ResolvedPlan plan = flash ? plan_22b([](ParallelPlan& p) { p.use_flash_attention = true; }) : plan_22b();
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      KernelList list{"layer", layer_ops(testing::gpt_22b(), plan, pass), {}, 0};
      double total = 0, gemm = 0;
      for (const LayerOp& op : list.ops) {
        const double t = op_time_s(op, plan.plan, f.gpu, f.calib);
        total += t;
        gemm += op.kind == OpKind::kGemm ? t : 0.0;
      }
      const double list_total = kernel_list_compute_time_s(list, plan.plan, f.gpu, f.calib);
      const double list_gemm = kernel_list_gemm_time_s(list, plan.plan, f.gpu, f.calib);
      EXPECT_NEAR(list_total, total, 1e-12 * total);
      EXPECT_NEAR(list_gemm, gemm, 1e-12 * gemm);
      EXPECT_GT(list_gemm, 0);
      EXPECT_LT(list_gemm, list_total);  // norms, attention and elementwise ops take time too
    }
  }
}

TEST(OpTime, EmptyListTakesNoTime) {
  const Fixture f;
  const KernelList empty{"data loading", {}, {}, 0};
  EXPECT_EQ(kernel_list_compute_time_s(empty, ParallelPlan{}, f.gpu, f.calib), 0.0);
  EXPECT_EQ(kernel_list_gemm_time_s(empty, ParallelPlan{}, f.gpu, f.calib), 0.0);
}

}  // namespace
}  // namespace megasim::models
