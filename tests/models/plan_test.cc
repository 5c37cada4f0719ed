// Plan resolution: derived sizes for the published configurations, Megatron's switch rules, and one
// test per invalid parameter expecting the ConfigError that names it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "models/plan.h"
#include "models_test_util.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

using testing::gpt_175b;
using testing::plan_error_key;
using testing::plan_of;

TEST(ResolvePlan, MegaScale175bAt12288Gpus) {
  // megascale_setup.md: 128 heads, vocab 64000, TP 8, PP 8, 6 virtual stages, batch 6144.
  const ModelSpec m = testing::gpt(96, 12288, 128, 64000);
  const ResolvedPlan r = resolve_plan(m, plan_of(m, 8, 8, 6, 1, 6144), 12288, 8);
  EXPECT_EQ(r.dp, 12288 / 64);
  EXPECT_EQ(r.virtual_stages, 6);
  EXPECT_TRUE(r.interleaved());
  EXPECT_EQ(r.layers_per_stage, 12);
  EXPECT_EQ(r.chunk_layers(0, 0), 2);               // 96 / (8 * 6)
  EXPECT_EQ(r.num_microbatches, 6144 / (1 * 192));  // 32
  EXPECT_EQ(r.padded_vocab_size, 63 * 1024);
  EXPECT_EQ(r.layout().world_size(), 12288);
  EXPECT_EQ(r.tokens_per_iteration(m.seq_length), 6144 * 2048);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(ResolvePlan, Korthikanti530bWithOneLayerPerChunk) {
  const ModelSpec m = testing::gpt(105, 20480, 128);
  const ResolvedPlan r = resolve_plan(m, plan_of(m, 8, 35, 3, 1, 2240), 2240, 8);
  EXPECT_EQ(r.dp, 8);
  EXPECT_EQ(r.layers_per_stage, 3);
  EXPECT_EQ(r.chunk_layers(0, 0), 1);
  EXPECT_EQ(r.num_microbatches, 280);  // 2240 / 8, divisible by pp = 35
}

TEST(ResolvePlan, OneChunkPerRankIsPlain1F1B) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
  p.num_layers_per_virtual_pipeline_stage = 12;  // = num_layers / pp
  const ResolvedPlan r = resolve_plan(m, p, 64, 8);
  EXPECT_FALSE(r.interleaved());
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(ResolvePlan, SequenceParallelAndTpOverlapOffAtTp1WithWarning) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 1, 8, 0, 1, 64);
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  const ResolvedPlan r = resolve_plan(m, p, 64, 8);
  EXPECT_FALSE(r.plan.sequence_parallel);
  EXPECT_FALSE(r.plan.tp_comm_overlap);
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(ResolvePlan, P2pOverlapOffWithoutInterleavingWithWarning) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
  p.overlap_p2p_comm = true;
  const ResolvedPlan r = resolve_plan(m, p, 64, 8);
  EXPECT_FALSE(r.plan.overlap_p2p_comm);
  EXPECT_EQ(r.warnings.size(), 1u);
  p = plan_of(m, 8, 8, 3, 1, 64);
  p.overlap_p2p_comm = true;
  EXPECT_TRUE(resolve_plan(m, p, 64, 8).plan.overlap_p2p_comm);
}

TEST(ResolvePlan, AllMegaScaleSwitchesTogetherAreValid) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 8, 8, 6, 1, 768);
  p.sequence_parallel = p.use_distributed_optimizer = p.overlap_grad_reduce = p.overlap_param_gather = true;
  p.tp_comm_overlap = p.overlap_p2p_comm = p.parallel_transformer_block = true;
  p.use_flash_attention = p.async_data_loading = true;
  p.sliding_window_size = 1024;
  p.recompute_granularity = RecomputeGranularity::kSelective;
  const ResolvedPlan r = resolve_plan(m, p, 256, 8);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.num_microbatches, 768 / 4);
}

// use_flash_attention (MegaScale's efficient operators: FlashAttention-2 with fused kernels) wins
// over attention_kernel = flash_attention_1, with a warning; flash_attention_2 agrees with it and
// warns nothing. The effective plan names the kernel in use.
TEST(ResolvePlan, UseFlashAttentionOverridesFlashAttention1WithWarning) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
  p.attention_kernel = AttentionKernel::kFlashAttention1;
  ResolvedPlan r = resolve_plan(m, p, 64, 8);
  EXPECT_EQ(r.plan.attention_kernel, AttentionKernel::kFlashAttention1);
  EXPECT_TRUE(r.warnings.empty());
  p.use_flash_attention = true;
  r = resolve_plan(m, p, 64, 8);
  EXPECT_EQ(r.plan.attention_kernel, AttentionKernel::kFlashAttention2);
  EXPECT_EQ(attention_kernel_of(p), AttentionKernel::kFlashAttention2);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("overrides attention_kernel = flash_attention_1"), std::string::npos) << r.warnings[0];
  p.attention_kernel = AttentionKernel::kFlashAttention2;
  EXPECT_TRUE(resolve_plan(m, p, 64, 8).warnings.empty());
  p.attention_kernel = AttentionKernel::kUnfused;
  EXPECT_EQ(resolve_plan(m, p, 64, 8).plan.attention_kernel, AttentionKernel::kFlashAttention2);
}

// flash-attn 1.x has no window argument: a window with FlashAttention-1 is accepted with a warning
// that names the assumption.
TEST(ResolvePlan, FlashAttention1WithAWindowWarns) {
  const ModelSpec m = gpt_175b();
  ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
  p.attention_kernel = AttentionKernel::kFlashAttention1;
  p.sliding_window_size = 1024;
  const ResolvedPlan r = resolve_plan(m, p, 64, 8);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no sliding-window argument"), std::string::npos) << r.warnings[0];
}

TEST(ResolvePlan, InvalidSizesNameTheirKey) {
  const ModelSpec m = gpt_175b();
  const auto key = [&](auto change, std::int64_t world = 64, std::int64_t per_server = 8) {
    ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
    change(p);
    return plan_error_key(m, p, world, per_server);
  };
  const auto none = [](ParallelPlan&) {};
  EXPECT_EQ(key(none), "");
  EXPECT_EQ(key(none, 0), "cluster.gpus");
  EXPECT_EQ(key(none, 64, 0), "cluster.gpus_per_server");
  EXPECT_EQ(key([](ParallelPlan& p) { p.tensor_model_parallel_size = 0; }), "plan.tensor_model_parallel_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.pipeline_model_parallel_size = 0; }), "plan.pipeline_model_parallel_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.micro_batch_size = 0; }), "plan.micro_batch_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.global_batch_size = -1; }), "plan.global_batch_size");
  // Tokens per iteration past 2^63 - 1 (a multiple of mb x dp = 1, so only the size is wrong).
  const std::int64_t most = std::numeric_limits<std::int64_t>::max() / m.seq_length;
  EXPECT_EQ(key([&](ParallelPlan& p) { p.global_batch_size = most; }), "");
  EXPECT_EQ(key([&](ParallelPlan& p) { p.global_batch_size = most + 1; }), "plan.global_batch_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.num_layers_per_virtual_pipeline_stage = -2; }),
            "plan.num_layers_per_virtual_pipeline_stage");
}

TEST(ResolvePlan, TensorParallelMustDivideHeadsGroupsFfnAndServer) {
  const auto tp_key = [](const ModelSpec& m, std::int64_t tp, std::int64_t per_server = 8) {
    return plan_error_key(m, plan_of(m, tp, 1, 0, 1, 64), 64, per_server);
  };
  EXPECT_EQ(tp_key(testing::gpt(4, 768, 12), 8), "plan.tensor_model_parallel_size");  // 12 heads % 8
  ModelSpec gqa = testing::gpt(4, 1024, 16);
  gqa.num_query_groups = 4;
  EXPECT_EQ(tp_key(gqa, 4), "");
  EXPECT_EQ(tp_key(gqa, 8), "plan.tensor_model_parallel_size");  // 4 groups % 8
  ModelSpec odd_ffn = testing::gpt(4, 1024, 16);
  odd_ffn.ffn_hidden_size = 1001;
  EXPECT_EQ(tp_key(odd_ffn, 8), "plan.tensor_model_parallel_size");
  EXPECT_EQ(tp_key(gpt_175b(), 16, 8), "plan.tensor_model_parallel_size");  // 16 > 8 GPUs per server
  EXPECT_EQ(tp_key(gpt_175b(), 8, 4), "plan.tensor_model_parallel_size");
}

TEST(ResolvePlan, PipelineRules) {
  const ModelSpec m = gpt_175b();
  EXPECT_EQ(plan_error_key(m, plan_of(m, 8, 8, 0, 1, 64), 72),
            "plan.pipeline_model_parallel_size");  // 64 does not divide 72
  EXPECT_EQ(plan_error_key(m, plan_of(m, 8, 7, 0, 1, 63), 56), "plan.pipeline_model_parallel_size");  // 96 % 7
  ParallelPlan p = plan_of(m, 8, 8, 0, 1, 64);
  p.num_layers_per_virtual_pipeline_stage = 5;  // 12 layers per stage % 5
  EXPECT_EQ(plan_error_key(m, p, 64), "plan.num_layers_per_virtual_pipeline_stage");
  p = plan_of(m, 8, 1, 0, 1, 64);
  p.num_layers_per_virtual_pipeline_stage = 4;  // interleaving without a pipeline
  EXPECT_EQ(plan_error_key(m, p, 8), "plan.num_layers_per_virtual_pipeline_stage");
}

TEST(ResolvePlan, BatchRules) {
  const ModelSpec m = gpt_175b();
  // dp = 128 / 64 = 2, micro 2: global must be a multiple of 4.
  EXPECT_EQ(plan_error_key(m, plan_of(m, 8, 8, 0, 2, 66), 128), "plan.global_batch_size");
  // Interleaved: 1F1B would accept 36 micro-batches, the interleaved schedule needs 36 % 8 == 0.
  EXPECT_EQ(plan_error_key(m, plan_of(m, 8, 8, 0, 1, 36), 64), "");
  EXPECT_EQ(plan_error_key(m, plan_of(m, 8, 8, 3, 1, 36), 64), "plan.global_batch_size");
}

TEST(ResolvePlan, SwitchRules) {
  const ModelSpec m = gpt_175b();
  const auto key = [&](auto change, const ModelSpec& model) {
    ParallelPlan p = plan_of(model, 8, 8, 0, 1, 64);
    change(p);
    return plan_error_key(model, p, 64);
  };
  EXPECT_EQ(key([](ParallelPlan& p) { p.tp_comm_overlap = true; }, m), "plan.tp_comm_overlap");
  EXPECT_EQ(key([](ParallelPlan& p) { p.overlap_param_gather = p.overlap_grad_reduce = true; }, m),
            "plan.overlap_param_gather");  // needs the distributed optimizer
  EXPECT_EQ(key([](ParallelPlan& p) { p.overlap_param_gather = p.use_distributed_optimizer = true; }, m),
            "plan.overlap_param_gather");  // needs overlap_grad_reduce
  EXPECT_EQ(key([](ParallelPlan& p) { p.sliding_window_size = -1; }, m), "plan.sliding_window_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.sliding_window_size = 2049; }, m), "plan.sliding_window_size");
  EXPECT_EQ(key([](ParallelPlan& p) { p.sliding_window_size = 2048; }, m), "");
  const ModelSpec odd_seq = testing::gpt(96, 12288, 96, 51200, 2044);  // 2044 % 8 != 0
  EXPECT_EQ(key([](ParallelPlan& p) { p.sequence_parallel = true; }, odd_seq), "plan.sequence_parallel");
  EXPECT_EQ(key([](ParallelPlan&) {}, odd_seq), "");
}

TEST(ResolvePlan, InvalidModelIsReportedFirst) {
  ModelSpec m = gpt_175b();
  m.hidden_size = 0;
  EXPECT_EQ(plan_error_key(m, plan_of(gpt_175b(), 8, 8, 0, 1, 64), 64), "model.hidden_size");
}

TEST(ResolvePlan, ParsesRecomputeGranularity) {
  EXPECT_EQ(parse_recompute_granularity("none"), RecomputeGranularity::kNone);
  EXPECT_EQ(parse_recompute_granularity("selective"), RecomputeGranularity::kSelective);
  EXPECT_EQ(parse_recompute_granularity("full"), RecomputeGranularity::kFull);
  for (auto g : {RecomputeGranularity::kNone, RecomputeGranularity::kSelective, RecomputeGranularity::kFull}) {
    EXPECT_EQ(parse_recompute_granularity(to_string(g)), g);
  }
  try {
    parse_recompute_granularity("block");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.recompute_granularity");
    EXPECT_EQ(e.value(), "block");
  }
}

TEST(ResolvePlan, ParsesAttentionKernel) {
  EXPECT_EQ(parse_attention_kernel("unfused"), AttentionKernel::kUnfused);
  EXPECT_EQ(parse_attention_kernel("flash_attention_1"), AttentionKernel::kFlashAttention1);
  EXPECT_EQ(parse_attention_kernel("flash_attention_2"), AttentionKernel::kFlashAttention2);
  for (auto k : {AttentionKernel::kUnfused, AttentionKernel::kFlashAttention1, AttentionKernel::kFlashAttention2}) {
    EXPECT_EQ(parse_attention_kernel(to_string(k)), k);
  }
  try {
    parse_attention_kernel("flash_attention_3");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.attention_kernel");
    EXPECT_EQ(e.value(), "flash_attention_3");
    EXPECT_EQ(e.valid(), "unfused, flash_attention_1 or flash_attention_2");
  }
}

}  // namespace
}  // namespace megasim::models
