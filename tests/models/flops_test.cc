// Iteration FLOPs as a sum of per-op FLOPs, checked against the closed formulas of Korthikanti et
// al. 2022 (model FLOPs) and Narayanan et al. 2021 (full recompute), and the FLOP convention
// checked against the published Korthikanti rows of megatron_published.csv (their MFU x peak x
// GPUs x iteration time must be our model FLOPs). Nothing here is fitted.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/flops.h"
#include "models/gpu_spec.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

// A row of megatron_published.csv (inputs plus the published time and MFU where given).
struct Row {
  double params_b;
  std::int64_t heads, hidden, layers, tp, pp, dp, vpp_chunks, gpus, global_batch, micro_batch;
  double iteration_time_s, mfu;
};

constexpr Row kNarayanan[] = {
    {1.7, 24, 2304, 24, 1, 1, 32, 0, 32, 512, 1, 0, 0},
    {3.6, 32, 3072, 30, 2, 1, 32, 0, 64, 512, 1, 0, 0},
    {7.5, 32, 4096, 36, 4, 1, 32, 0, 128, 512, 1, 0, 0},
    {18.4, 48, 6144, 40, 8, 1, 32, 0, 256, 1024, 1, 0, 0},
    {39.1, 64, 8192, 48, 8, 2, 32, 0, 512, 1536, 1, 0, 0},
    {76.1, 80, 10240, 60, 8, 4, 32, 0, 1024, 1792, 1, 0, 0},
    {145.6, 96, 12288, 80, 8, 8, 24, 0, 1536, 2304, 1, 0, 0},
    {310.1, 128, 16384, 96, 8, 16, 15, 0, 1920, 2160, 1, 0, 0},
    {529.6, 128, 20480, 105, 8, 35, 9, 0, 2520, 2520, 1, 0, 0},
    {1008.0, 160, 25600, 128, 8, 64, 6, 0, 3072, 3072, 1, 0, 0},
};

// Korthikanti et al. 2022 Table 5 and Section 6 (selective recompute + sequence parallel).
constexpr Row kKorthikanti[] = {
    {22, 64, 6144, 48, 8, 1, 1, 0, 8, 4, 4, 1.10, 0.415},
    {175, 96, 12288, 96, 8, 8, 1, 3, 64, 64, 1, 13.75, 0.514},
    {530, 128, 20480, 105, 8, 35, 1, 3, 280, 280, 1, 37.83, 0.560},
    {1000, 160, 25600, 128, 8, 64, 1, 0, 512, 512, 1, 71.49, 0.563},
    {530, 128, 20480, 105, 8, 35, 8, 3, 2240, 2240, 1, 39.15, 0.542},
};

ModelSpec model_of(const Row& r) {
  return testing::gpt(r.layers, r.hidden, r.heads);
}

ResolvedPlan resolve_row(const Row& r, RecomputeGranularity recompute) {
  const ModelSpec m = model_of(r);
  ParallelPlan p = testing::plan_of(m, r.tp, r.pp, r.vpp_chunks, r.micro_batch, r.global_batch);
  p.recompute_granularity = recompute;
  p.sequence_parallel = recompute == RecomputeGranularity::kSelective;
  return resolve_plan(m, p, r.gpus, 8);
}

// 72*B*s*l*h^2*(1 + s/(6h) + V/(12lh)), Korthikanti et al. 2022 App. A.
double korthikanti_model_flops(double b, double s, double l, double h, double v) {
  return 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
}

TEST(IterationFlops, SumOfOpsIsKorthikantisFormulaForEveryPublishedRow) {
  for (const Row& r : kKorthikanti) {
    const ResolvedPlan plan = resolve_row(r, RecomputeGranularity::kSelective);
    const double expected = korthikanti_model_flops(
        static_cast<double>(r.global_batch), 2048, static_cast<double>(r.layers), static_cast<double>(r.hidden), 51200);
    const IterationFlops f = iteration_flops(model_of(r), plan);
    EXPECT_NEAR(f.model, expected, 1e-12 * expected) << r.params_b;
    EXPECT_EQ(f.model_full_attention, f.model) << r.params_b;  // no window: MegaScale's count is ours
  }
}

TEST(IterationFlops, FullRecomputeIsNarayanansFormula) {
  for (const Row& r : kNarayanan) {
    const ResolvedPlan plan = resolve_row(r, RecomputeGranularity::kFull);
    const double b = static_cast<double>(r.global_batch), s = 2048, l = static_cast<double>(r.layers);
    const double h = static_cast<double>(r.hidden), v = 51200;
    // Narayanan et al. 2021: 96*B*s*l*h^2*(1 + s/(6h) + V/(16lh)): the layers run forward twice.
    const double expected = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
    const IterationFlops f = iteration_flops(model_of(r), plan);
    EXPECT_NEAR(f.hardware, expected, 1e-12 * expected) << r.params_b;
    EXPECT_NEAR(f.model, korthikanti_model_flops(b, s, l, h, v), 1e-12 * expected) << r.params_b;
  }
}

TEST(IterationFlops, NarayananParameterCountsMatchTheTable) {
  // Table 1 rounds to 0.1B; the smallest models differ by more than rounding (1.7 vs 1.65), so only
  // rows from 18.4B up are compared, within 0.5%.
  for (const Row& r : kNarayanan) {
    if (r.params_b < 18) continue;
    const double count = static_cast<double>(parameter_count(model_of(r), r.tp));
    EXPECT_NEAR(count / 1e9, r.params_b, 0.005 * r.params_b) << r.params_b;
  }
}

TEST(IterationFlops, PublishedKorthikantiMfuImpliesOurModelFlops) {
  // mfu * peak * gpus * time is the FLOP count Korthikanti et al. used; same convention => equal
  // within the rounding of the 3-digit MFU and the published time (2%).
  const double peak = find_gpu("A100").peak_bf16_dense_tflops;
  for (const Row& r : kKorthikanti) {
    const double ours = iteration_flops(model_of(r), resolve_row(r, RecomputeGranularity::kSelective)).model;
    const double published = r.mfu * peak * 1e12 * static_cast<double>(r.gpus) * r.iteration_time_s;
    EXPECT_NEAR(published / ours, 1.0, 0.02) << r.params_b << "B on " << r.gpus << " GPUs";
    EXPECT_NEAR(flops_utilization(ours, r.iteration_time_s, r.gpus, peak), r.mfu, 0.02 * r.mfu);
  }
}

TEST(IterationFlops, SelectiveRecomputeAddsOneAttentionCoreForward) {
  const Row& r = kKorthikanti[0];
  const IterationFlops f = iteration_flops(model_of(r), resolve_row(r, RecomputeGranularity::kSelective));
  const double b = 4, s = 2048, l = 48, h = 6144;
  // One extra forward of QK^T and PV: 4*b*s^2*h per layer and sample, i.e. s/(18h) in the bracket.
  EXPECT_NEAR(f.hardware - f.model, 4.0 * b * s * s * h * l, 1e-9 * f.model);
  const IterationFlops none = iteration_flops(model_of(r), resolve_row(r, RecomputeGranularity::kNone));
  EXPECT_DOUBLE_EQ(none.hardware, none.model);
}

// Megatron's --use-flash-attn (FlashAttention-1) replaces the checkpointed core attention, so under
// selective recompute nothing runs twice: hardware FLOPs = model FLOPs, and the model FLOPs are the
// unfused plan's (the convention counts the math, not the kernel). Full recompute still reruns the
// whole layer forward, attention included: the same HFU excess as the unfused kernel.
TEST(IterationFlops, FlashAttention1RecomputesNoAttention) {
  const Row& r = kKorthikanti[0];
  ResolvedPlan fa1 = resolve_row(r, RecomputeGranularity::kSelective);
  const double unfused_model = iteration_flops(model_of(r), fa1).model;
  ParallelPlan p = fa1.plan;
  p.attention_kernel = AttentionKernel::kFlashAttention1;
  fa1 = resolve_plan(model_of(r), p, r.gpus, 8);
  const IterationFlops f = iteration_flops(model_of(r), fa1);
  EXPECT_DOUBLE_EQ(f.hardware, f.model);
  EXPECT_NEAR(f.model, unfused_model, 1e-12 * unfused_model);
  const IterationFlops full_unfused = iteration_flops(model_of(r), resolve_row(r, RecomputeGranularity::kFull));
  p.recompute_granularity = RecomputeGranularity::kFull;
  const IterationFlops full_fa1 = iteration_flops(model_of(r), resolve_plan(model_of(r), p, r.gpus, 8));
  EXPECT_NEAR(full_fa1.hardware - full_fa1.model, full_unfused.hardware - full_unfused.model,
              1e-12 * full_unfused.hardware);
}

TEST(IterationFlops, SwitchesThatKeepTheMathKeepModelFlops) {
  const ModelSpec m = testing::gpt_175b();
  const auto flops = [&](auto change) {
    ParallelPlan p = testing::plan_of(m, 8, 8, 3, 1, 64);
    change(p);
    return iteration_flops(m, resolve_plan(m, p, 64, 8)).model;
  };
  const double base = flops([](ParallelPlan&) {});
  EXPECT_DOUBLE_EQ(flops([](ParallelPlan& p) { p.use_flash_attention = true; }), base);
  EXPECT_DOUBLE_EQ(flops([](ParallelPlan& p) { p.attention_kernel = AttentionKernel::kFlashAttention1; }), base);
  EXPECT_DOUBLE_EQ(flops([](ParallelPlan& p) { p.parallel_transformer_block = true; }), base);
  EXPECT_DOUBLE_EQ(flops([](ParallelPlan& p) { p.sequence_parallel = true; }), base);
  // The model FLOPs depend on the global batch, not on how it is split.
  EXPECT_NEAR(flops([](ParallelPlan& p) { p.micro_batch_size = 2; }), base, 1e-12 * base);
}

TEST(IterationFlops, SlidingWindowScalesTheAttentionTerm) {
  const ModelSpec m = testing::gpt_175b();
  ParallelPlan p = testing::plan_of(m, 8, 8, 3, 1, 64);
  p.sliding_window_size = 1024;  // s/2: attended keys 3s/4
  const double b = 64, s = 2048, l = 96, h = 12288, v = 51200;
  const double expected = 72.0 * b * s * l * h * h * (1.0 + 0.75 * s / (6.0 * h) + v / (12.0 * l * h));
  const IterationFlops got = iteration_flops(m, resolve_plan(m, p, 64, 8));
  EXPECT_NEAR(got.model, expected, 1e-12 * expected);
  // MegaScale's MFU counts the window's queries against all s keys: the formula as it stands.
  EXPECT_NEAR(got.model_full_attention, korthikanti_model_flops(b, s, l, h, v), 1e-12 * expected);
}

TEST(IterationFlops, GqaSwigluSumMatchesItsOwnClosedForm) {
  ModelSpec m = testing::gpt(32, 4096, 32, 32000, 4096);
  m.num_query_groups = 8;
  m.activation = Activation::kSwiglu;
  m.ffn_hidden_size = 11008;
  const ResolvedPlan plan = resolve_plan(m, testing::plan_of(m, 8, 4, 0, 2, 256), 256, 8);
  const double b = 256, s = 4096, l = 32, h = 4096, gd = 8 * 128, f = 11008;
  const double v = static_cast<double>(padded_vocab_size(m, 8));  // 32768
  // 3 passes x 2 FLOPs/MAC x (QKV + proj + fc1 (2f) + fc2) + 12 b s^2 h per layer + 6 b s h V logits.
  const double expected =
      6.0 * b * s * l * (h * (h + 2 * gd) + h * h + 3.0 * h * f) + 12.0 * b * s * s * h * l + 6.0 * b * s * h * v;
  EXPECT_NEAR(iteration_flops(m, plan).model, expected, 1e-12 * expected);
}

TEST(IterationFlops, UtilizationOfAHandComputedCase) {
  // 1e15 FLOPs in 2 s on 4 GPUs of 125 TFLOPS: 1e15 / (2 * 4 * 125e12) = 1.
  EXPECT_DOUBLE_EQ(flops_utilization(1e15, 2.0, 4, 125.0), 1.0);
  EXPECT_DOUBLE_EQ(flops_utilization(1e15, 4.0, 4, 125.0), 0.5);
  EXPECT_NE(std::string(kFlopConvention).find("korthikanti2022"), std::string::npos);
}

}  // namespace
}  // namespace megasim::models
