// Memory per GPU against Korthikanti et al. 2022's activation formulas (section 4), Megatron's
// schedules for the in-flight count, and the model-state bytes per parameter of the calibration
// README (18, or 6 + 12/d with the distributed optimizer). Expected values are those formulas.
#include <gtest/gtest.h>

#include <cstdint>

#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models_test_util.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// One 22B layer as in Korthikanti Table 4: s 2048, b 4, h 6144, a 64, t 8.
constexpr std::int64_t kS = 2048, kB = 4, kH = 6144, kA = 64, kT = 8;
constexpr std::int64_t kSbh = kS * kB * kH;

ResolvedPlan plan_22b(RecomputeGranularity recompute, bool sp, bool flash = false) {
  const ModelSpec m = testing::gpt_22b();
  ParallelPlan p = testing::plan_of(m, 8, 1, 0, 4, 4);
  p.recompute_granularity = recompute;
  p.sequence_parallel = sp;
  p.use_flash_attention = flash;
  return resolve_plan(m, p, 8, 8);
}

std::int64_t layer_bytes_22b(RecomputeGranularity recompute, bool sp, bool flash = false) {
  return layer_activation_bytes(testing::gpt_22b(), plan_22b(recompute, sp, flash));
}

TEST(Memory, LayerActivationsMatchKorthikanti) {
  using R = RecomputeGranularity;
  const std::int64_t scores = 5 * kA * kS * kS * kB / kT;  // 5as/(ht) * sbh = 5 a s^2 b / t
  // TP without SP: sbh (10 + 24/t + 5as/(ht)).
  EXPECT_EQ(layer_bytes_22b(R::kNone, false), kSbh * 10 + kSbh * 24 / kT + scores);
  // TP with SP: sbh/t (34 + 5as/h).
  EXPECT_EQ(layer_bytes_22b(R::kNone, true), kSbh * 34 / kT + scores);
  // Selective: the score term goes; 34 sbh/t with SP, sbh (10 + 24/t) without.
  EXPECT_EQ(layer_bytes_22b(R::kSelective, true), kSbh * 34 / kT);
  EXPECT_EQ(layer_bytes_22b(R::kSelective, false), kSbh * 10 + kSbh * 24 / kT);
  // Full: only the layer input, 2 sbh (/t with SP).
  EXPECT_EQ(layer_bytes_22b(R::kFull, true), 2 * kSbh / kT);
  EXPECT_EQ(layer_bytes_22b(R::kFull, false), 2 * kSbh);
  // FlashAttention keeps no score matrix: selective's figure without any recompute.
  EXPECT_EQ(layer_bytes_22b(R::kNone, true, true), kSbh * 34 / kT);
}

// FlashAttention-1 (attention_kernel alone, Megatron's other layer ops unchanged) stores what FA2
// stores, Q, K, V and the output but no s x s score, softmax or dropout tensor: 34 sbh/t per layer
// with SP, with or without selective recompute, and every stage's activations equal FA2's.
TEST(Memory, FlashAttention1KeepsNoScoreMatrix) {
  using R = RecomputeGranularity;
  const ModelSpec m = testing::gpt_22b();
  for (R recompute : {R::kNone, R::kSelective}) {
    ParallelPlan p = testing::plan_of(m, 8, 1, 0, 4, 4);
    p.recompute_granularity = recompute;
    p.sequence_parallel = true;
    p.attention_kernel = AttentionKernel::kFlashAttention1;
    EXPECT_EQ(layer_activation_bytes(m, resolve_plan(m, p, 8, 8)), kSbh * 34 / kT);
  }
  ParallelPlan fa1 = testing::plan_of(testing::gpt_175b(), 8, 8, 2, 1, 64);
  fa1.sequence_parallel = true;
  fa1.recompute_granularity = RecomputeGranularity::kSelective;
  ParallelPlan fa2 = fa1;
  fa1.attention_kernel = AttentionKernel::kFlashAttention1;
  fa2.attention_kernel = AttentionKernel::kFlashAttention2;
  const MemoryEstimate one = estimate_memory(testing::gpt_175b(), resolve_plan(testing::gpt_175b(), fa1, 64, 8));
  const MemoryEstimate two = estimate_memory(testing::gpt_175b(), resolve_plan(testing::gpt_175b(), fa2, 64, 8));
  ASSERT_EQ(one.stages.size(), two.stages.size());
  for (std::size_t k = 0; k < one.stages.size(); ++k) {
    EXPECT_EQ(one.stages[k].activations_bytes, two.stages[k].activations_bytes) << "stage " << k;
  }
}

TEST(Memory, GqaSwigluAndParallelBlockGeneraliseTheParts) {
  ModelSpec m = testing::gpt(4, 4096, 32, 32000, 4096);
  m.num_query_groups = 8;
  m.activation = Activation::kSwiglu;
  m.ffn_hidden_size = 11008;
  ParallelPlan p = testing::plan_of(m, 4, 1, 0, 1, 2);
  p.sequence_parallel = true;
  p.recompute_granularity = RecomputeGranularity::kSelective;
  const std::int64_t s = 4096, h = 4096, gd = 8 * 128, f = 11008, t = 4;
  // Replicated 10sbh/t; sharded Q 2sbh + K,V 4 s b g d + projection input 2sbh + SwiGLU 6 s b f.
  const std::int64_t expected = 10 * s * h / t + (2 * s * h + 4 * s * gd + 2 * s * h + 6 * s * f) / t;
  EXPECT_EQ(layer_activation_bytes(m, resolve_plan(m, p, 8, 8)), expected);
  p.parallel_transformer_block = true;  // one LayerNorm (input and output) and one mask: 5sbh/t
  EXPECT_EQ(layer_activation_bytes(m, resolve_plan(m, p, 8, 8)), expected - 5 * s * h / t);
}

TEST(Memory, InFlightMicroBatchesOf1F1B) {
  const ModelSpec m = testing::gpt_175b();
  const ResolvedPlan many = resolve_plan(m, testing::plan_of(m, 8, 8, 0, 1, 64), 64, 8);
  for (std::int64_t stage = 0; stage < 8; ++stage) EXPECT_EQ(in_flight_chunks(many, stage), 8 - stage);
  const ResolvedPlan few = resolve_plan(m, testing::plan_of(m, 8, 8, 0, 1, 3), 64, 8);
  EXPECT_EQ(in_flight_chunks(few, 0), 3);  // capped by the 3 micro-batches
  EXPECT_EQ(in_flight_chunks(few, 6), 2);
}

TEST(Memory, InFlightChunksOfTheInterleavedSchedule) {
  const ModelSpec m = testing::gpt_175b();
  const std::int64_t pp = 8, v = 3;
  const ResolvedPlan r = resolve_plan(m, testing::plan_of(m, 8, pp, v, 1, 64), 64, 8);
  // Warm-up 2(pp - k - 1) + (v - 1) pp, plus the forward before the first backward.
  EXPECT_EQ(in_flight_chunks(r, 0), 2 * (pp - 1) + (v - 1) * pp + 1);
  EXPECT_EQ(in_flight_chunks(r, pp - 1), (v - 1) * pp + 1);
  // Korthikanti: the first stage holds pp (1 + (pp-1)/(pp v)) micro-batches of its layers, i.e.
  // v * that = v pp + pp - 1 chunks, the count above.
  EXPECT_EQ(in_flight_chunks(r, 0), v * pp + pp - 1);
  // A middle stage's chunks are alike: its activations are the held chunks times one chunk's layers.
  const std::int64_t per_chunk = r.layers_per_stage / v;
  EXPECT_EQ(estimate_memory(m, r).stages[3].activations_bytes,
            in_flight_chunks(r, 3) * per_chunk * layer_activation_bytes(m, r));
  // m == pp: Megatron runs every forward first.
  const ResolvedPlan all = resolve_plan(m, testing::plan_of(m, 8, pp, v, 1, 8), 64, 8);
  EXPECT_EQ(in_flight_chunks(all, 3), 8 * v);
}

TEST(Memory, ModelStateBytesPerParameter) {
  const ModelSpec m = testing::gpt_175b();
  ParallelPlan p = testing::plan_of(m, 8, 8, 0, 1, 1024);
  const std::int64_t n = stage_parameter_count(m, 8, 8, 3);
  const MemoryBreakdown plain = estimate_memory(m, resolve_plan(m, p, 1024, 8)).stages[3];
  EXPECT_EQ(plain.parameters_bytes + plain.gradients_bytes + plain.optimizer_bytes, 18 * n);
  p.use_distributed_optimizer = true;  // dp = 1024 / 64 = 16: 6 + 12/16 bytes per parameter
  const MemoryBreakdown dist = estimate_memory(m, resolve_plan(m, p, 1024, 8)).stages[3];
  EXPECT_EQ(dist.parameters_bytes, 2 * n);
  EXPECT_EQ(dist.gradients_bytes, 4 * n);
  EXPECT_EQ(dist.optimizer_bytes, 12 * ((n + 15) / 16));
  // About 175e9/64 parameters on a middle stage (see model_spec_test), 6.75 bytes each.
  EXPECT_NEAR(static_cast<double>(dist.total_bytes() - dist.activations_bytes), 6.75 * 175e9 / 64,
              0.01 * 6.75 * 175e9 / 64);
}

TEST(Memory, Korthikanti175bStagesWithSelectiveRecompute) {
  const ModelSpec m = testing::gpt_175b();
  ParallelPlan p = testing::plan_of(m, 8, 8, 3, 1, 64);  // Table 5: TP 8, PP 8, 3 chunks, batch 64
  p.sequence_parallel = true;
  p.recompute_granularity = RecomputeGranularity::kSelective;
  const ResolvedPlan r = resolve_plan(m, p, 64, 8);
  const MemoryEstimate est = estimate_memory(m, r);
  ASSERT_EQ(est.stages.size(), 8u);
  const std::int64_t sbh = 2048 * 12288, layer = 34 * sbh / 8;
  // Middle stage k = 3: (2(8-3-1) + 2*8 + 1) = 25 chunks of 4 layers.
  EXPECT_EQ(est.stages[3].activations_bytes, 25 * 4 * layer);
  // First stage: 31 chunks (= 8 (1 + 7/24) * 12 layers / 4) plus the embedding dropout mask
  // (sbh/t, one byte) of its chunk-0 micro-batches: 15 after the warm-up (chunks 0, 1, 2 of
  // micro-batches 0-7 and chunk 0 of 8-14), then the first steady pair's forward (chunk 0 of
  // micro-batch 15) while its backward frees a chunk 2 without a mask, so 16 at the peak.
  EXPECT_EQ(est.stages[0].activations_bytes, 31 * 4 * layer + 16 * sbh / 8);
  // Last stage: 17 chunks plus, for one micro-batch, 4 sbh/t and the fp32 logits 4 s V / t.
  EXPECT_EQ(est.stages[7].activations_bytes, 17 * 4 * layer + 4 * sbh / 8 + 4 * 2048 * 51200 / 8);
  EXPECT_EQ(est.peak_stage(), 0);
  EXPECT_NO_THROW(require_fits(est, find_gpu("A100")));
}

TEST(Memory, FullRecomputeAddsTheLayerBeingRecomputed) {
  const ModelSpec m = testing::gpt_175b();
  ParallelPlan p = testing::plan_of(m, 8, 8, 0, 1, 64);
  p.sequence_parallel = true;
  p.recompute_granularity = RecomputeGranularity::kFull;
  const MemoryEstimate est = estimate_memory(m, resolve_plan(m, p, 64, 8));
  const std::int64_t s = 2048, h = 12288, a = 96, t = 8;
  // Stage 4 holds 8 - 4 = 4 micro-batches x 12 layer inputs (2sh/t), plus one layer without
  // recompute (sh/t (34 + 5as/h)) during its backward.
  EXPECT_EQ(est.stages[4].activations_bytes, 4 * 12 * 2 * s * h / t + (34 * s * h + 5 * a * s * s) / t);
}

TEST(Memory, DoesNotFitNamesStageAndSizes) {
  const ModelSpec m = testing::gpt_175b();
  const MemoryEstimate est = estimate_memory(m, resolve_plan(m, testing::plan_of(m, 8, 1, 0, 1, 8), 8, 8));
  // 175e9 / 8 parameters x 18 bytes is about 394 GB, far over 80 GB.
  EXPECT_GT(static_cast<double>(est.peak().total_bytes()), 18.0 * 174e9 / 8);
  try {
    require_fits(est, find_gpu("A100"));
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan");
    EXPECT_NE(e.value().find("stage 0"), std::string::npos);
    EXPECT_NE(e.valid().find("A100-SXM-80GB has 85.9 GB"), std::string::npos);
  }
}

// Without dropout (model.hidden_dropout = 0, as Llama trains) PyTorch keeps no mask: each layer
// holds 2 sbh bytes less (one 1-byte mask per residual branch; with SP divided over TP), one with
// the parallel block's single branch, and the first stage no embedding-dropout mask.
TEST(Memory, NoDropoutKeepsNoMasks) {
  for (const bool parallel : {false, true}) {
    for (const bool sp : {false, true}) {
      ModelSpec m = testing::gpt_22b();
      ParallelPlan p = testing::plan_of(m, 8, 2, 0, 4, 16);
      p.sequence_parallel = sp;
      p.use_flash_attention = true;
      p.parallel_transformer_block = parallel;
      const ResolvedPlan plan = resolve_plan(m, p, 16, 8);
      const MemoryEstimate with = estimate_memory(m, plan);
      m.hidden_dropout = 0;
      const MemoryEstimate without = estimate_memory(m, plan);
      const std::int64_t masks = (parallel ? 1 : 2) * (sp ? kSbh / kT : kSbh);
      EXPECT_EQ(layer_activation_bytes(m, plan), layer_activation_bytes(testing::gpt_22b(), plan) - masks);
      // Stage 0 holds pp = 2 micro-batches of 22 layers, plus the embedding mask (sbh / t with SP).
      const std::int64_t embedding_mask = sp ? kSbh / kT : kSbh;
      EXPECT_EQ(with.stages[0].activations_bytes - without.stages[0].activations_bytes,
                2 * (m.num_layers / 2 * masks + embedding_mask));
      EXPECT_EQ(with.stages[1].activations_bytes - without.stages[1].activations_bytes, m.num_layers / 2 * masks);
    }
  }
}

}  // namespace
}  // namespace megasim::models
