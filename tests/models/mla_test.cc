// Multi-head latent attention and selective recompute by module: DeepSeek-V3's published size, MLA's
// FLOPs per token from its projections, and what each recompute module reruns and stops keeping.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/flops.h"
#include "models/layer_ops.h"
#include "models/memory.h"
#include "models/moe.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

using testing::plan_error_key;

// DeepSeek-V3 (arXiv 2412.19437): 61 layers, MLA, the first 3 dense, 256 + 1 shared experts.
ModelSpec deepseek_v3() {
  ModelSpec m;
  m.num_layers = 61;
  m.hidden_size = 7168;
  m.num_attention_heads = 128;
  m.multi_latent_attention = true;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_head_dim = 128;
  m.qk_pos_emb_head_dim = 64;
  m.v_head_dim = 128;
  m.ffn_hidden_size = 18432;
  m.activation = Activation::kSwiglu;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.seq_length = 4096;
  m.vocab_size = 129280;
  m.untie_embeddings_and_output_weights = true;
  m.hidden_dropout = 0;
  m.num_experts = 256;
  m.moe_router_topk = 8;
  m.moe_ffn_hidden_size = 2048;
  m.moe_shared_expert_intermediate_size = 2048;
  m.moe_first_dense_layers = 3;
  return m;
}

// The published 671B (main model, without the multi-token-prediction module).
TEST(Mla, DeepSeekV3HasItsPublishedParameterCount) {
  EXPECT_NEAR(static_cast<double>(parameter_count(deepseek_v3(), 1)), 671e9, 1e9);
}

// MLA forward FLOPs per token of one dense layer: 2 x each projection's weights (q down and up,
// kv down and up, output) plus the scores and context over (qk + RoPE) and v columns per head.
TEST(Mla, AttentionFlopsFollowTheProjections) {
  ModelSpec m = deepseek_v3();
  m.num_experts = 0;  // dense layers only
  m.num_layers = 1;
  ParallelPlan p;
  p.use_flash_attention = true;
  p.global_batch_size = 1;
  const ResolvedPlan plan = resolve_plan(m, p, 1, 8);
  double attention = 0;
  for (const LayerOp& op : layer_ops(m, plan, Pass::kForward)) {
    if (op.name == "fc1" || op.name == "fc2") continue;
    attention += op.flops;
  }
  const double h = 7168, s = 4096, a = 128;
  const double weights = h * 1536 + 1536 * a * 192 + h * 576 + 512 * a * 256 + a * 128 * h;
  const double scores = 2 * s * a * 192 + 2 * s * a * 128;  // per token: s keys, full s x s convention
  EXPECT_NEAR(attention, s * (2 * weights + scores), 1e-9 * attention);
}

TEST(Mla, BadMlaKeysAreRefusedByName) {
  ModelSpec groups = deepseek_v3();
  groups.num_query_groups = 8;
  ParallelPlan p;
  p.global_batch_size = 1;
  EXPECT_EQ(plan_error_key(groups, p, 1), "model.num_query_groups");
  ModelSpec rank = deepseek_v3();
  rank.kv_lora_rank = 0;
  EXPECT_EQ(plan_error_key(rank, p, 1), "model.kv_lora_rank");
  ParallelPlan parallel = p;
  parallel.parallel_transformer_block = true;
  EXPECT_EQ(plan_error_key(deepseek_v3(), parallel, 1), "plan.parallel_transformer_block");
}

TEST(RecomputeModules, ParseRoundTripsAndRefusesUnknownNames) {
  const std::uint32_t m = parse_recompute_modules("layernorm,mla_up_proj,moe_act");
  EXPECT_EQ(m, kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct);
  EXPECT_EQ(to_string_recompute_modules(m), "layernorm,mla_up_proj,moe_act");
  EXPECT_THROW((void)parse_recompute_modules("layernorm,attention"), sim::ConfigError);
  EXPECT_THROW((void)parse_recompute_modules(""), sim::ConfigError);
}

// layernorm: backward reruns every LayerNorm, and the layer stops keeping their outputs (2 per
// layer, the first GEMMs' inputs, 2 bytes per element of the s x b x h region each: with SP over tp).
TEST(RecomputeModules, LayernormRerunsTheNormsAndKeepsTheirOutputsNoLonger) {
  ModelSpec m = testing::gpt(4, 1024, 16, 32000, 2048);
  m.hidden_dropout = 0;
  ParallelPlan p;
  p.tensor_model_parallel_size = 2;
  p.sequence_parallel = true;
  p.use_flash_attention = true;
  p.global_batch_size = 1;
  p.recompute_granularity = RecomputeGranularity::kSelective;
  const ResolvedPlan core = resolve_plan(m, p, 2, 8);
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeLayernorm;
  const ResolvedPlan norms = resolve_plan(m, p, 2, 8);
  EXPECT_TRUE(layer_ops(m, core, Pass::kRecompute).empty());  // FlashAttention: nothing to rerun
  std::set<std::string> rerun;
  for (const LayerOp& op : layer_ops(m, norms, Pass::kRecompute)) rerun.insert(op.name);
  EXPECT_EQ(rerun, (std::set<std::string>{"input_layernorm", "post_attention_layernorm"}));
  EXPECT_EQ(layer_activation_bytes(m, core) - layer_activation_bytes(m, norms), 2 * 2 * 2048 * 1024 / 2);
  // The rerun norms count in hardware FLOPs only, and norms have none: MFU and HFU stay equal.
  EXPECT_DOUBLE_EQ(iteration_flops(m, norms).hardware, iteration_flops(m, norms).model);
}

}  // namespace
}  // namespace megasim::models
