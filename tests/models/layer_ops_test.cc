// Per-op FLOPs and bytes of one layer, micro-batch and TP rank. Expected values come from the GEMM
// shapes written out by hand (Korthikanti et al. 2022 App. A): forward per layer 24*s*b*h^2 for
// the linear layers and 4*b*s^2*h for the attention core, each divided by t.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/layer_ops.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

// Korthikanti Table 4: one 22B layer (h 6144, a 64, s 2048) on 8 GPUs, micro-batch 4.
constexpr double kS = 2048, kB = 4, kH = 6144, kT = 8, kA = 64;

ResolvedPlan plan_22b(ParallelPlan p = testing::plan_of(testing::gpt_22b(), 8, 1, 0, 4, 4)) {
  return resolve_plan(testing::gpt_22b(), p, 8, 8);
}

ParallelPlan plan_22b_with(auto change) {
  ParallelPlan p = testing::plan_of(testing::gpt_22b(), 8, 1, 0, 4, 4);
  change(p);
  return p;
}

double sum_of(const std::vector<LayerOp>& ops, OpKind kind) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.kind == kind ? op.flops : 0.0;
  return total;
}

std::vector<std::string> names(const std::vector<LayerOp>& ops) {
  std::vector<std::string> out;
  for (const LayerOp& op : ops) out.push_back(op.name);
  return out;
}

TEST(LayerOps, ForwardFlopsAreKorthikantisPerLayerTerms) {
  const auto ops = layer_ops(testing::gpt_22b(), plan_22b(), Pass::kForward);
  EXPECT_DOUBLE_EQ(sum_of(ops, OpKind::kGemm), 24.0 * kS * kB * kH * kH / kT);
  EXPECT_DOUBLE_EQ(sum_of(ops, OpKind::kAttention), 4.0 * kB * kS * kS * kH / kT);
  EXPECT_DOUBLE_EQ(sum_of(ops, OpKind::kElementwise) + sum_of(ops, OpKind::kNorm), 0.0);
}

TEST(LayerOps, ForwardOrderIsMegatronsLayer) {
  const std::vector<std::string> expected = {"input_layernorm",
                                             "qkv",
                                             "qkv_bias",
                                             "attention_scores",
                                             "softmax",
                                             "attention_dropout",
                                             "attention_context",
                                             "proj",
                                             "attention_residual",
                                             "post_attention_layernorm",
                                             "fc1",
                                             "gelu",
                                             "fc2",
                                             "mlp_residual"};
  EXPECT_EQ(names(layer_ops(testing::gpt_22b(), plan_22b(), Pass::kForward)), expected);
  const auto backward = names(layer_ops(testing::gpt_22b(), plan_22b(), Pass::kBackward));
  ASSERT_GE(backward.size(), 4u);
  EXPECT_EQ(backward[0], "mlp_residual_bwd");
  EXPECT_EQ(backward[1], "fc2_bias_grad");  // autograd's reduction of the bias-dropout-add's bias
  EXPECT_EQ(backward[2], "fc2_dgrad");      // data gradient first, then the weight gradient
  EXPECT_EQ(backward[3], "fc2_wgrad");
  EXPECT_EQ(backward.back(), "input_layernorm_bwd");
}

TEST(LayerOps, EveryProductDoesTwoFlopsPerMultiplyAdd) {
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const LayerOp& op : layer_ops(testing::gpt_22b(), plan_22b(), pass)) {
      const GemmShape& g = op.shape;
      const double expected = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                              static_cast<double>(g.batch);
      EXPECT_DOUBLE_EQ(op.executed_flops, expected) << op.name;
      EXPECT_DOUBLE_EQ(op.flops, op.executed_flops) << op.name;  // no window, no FlashAttention
    }
  }
  // qkv: m = s*b tokens, n = 3h/t, k = h.
  const LayerOp qkv = layer_ops(testing::gpt_22b(), plan_22b(), Pass::kForward)[1];
  EXPECT_EQ(qkv.shape.m, 2048 * 4);
  EXPECT_EQ(qkv.shape.n, 3 * 6144 / 8);
  EXPECT_EQ(qkv.shape.k, 6144);
}

TEST(LayerOps, BackwardIsTwiceForward) {
  for (bool flash : {false, true}) {
    const ResolvedPlan r = plan_22b(plan_22b_with([&](ParallelPlan& p) { p.use_flash_attention = flash; }));
    const auto fwd = layer_ops(testing::gpt_22b(), r, Pass::kForward);
    const auto bwd = layer_ops(testing::gpt_22b(), r, Pass::kBackward);
    EXPECT_DOUBLE_EQ(sum_flops(bwd), 2.0 * sum_flops(fwd)) << flash;
  }
}

TEST(LayerOps, GqaAndSwigluGeneraliseTheGemms) {
  ModelSpec m = testing::gpt(4, 4096, 32, 32000, 4096);
  m.num_query_groups = 8;
  m.activation = Activation::kSwiglu;
  m.ffn_hidden_size = 11008;
  const ResolvedPlan r = resolve_plan(m, testing::plan_of(m, 4, 1, 0, 1, 2), 8, 8);
  const double s = 4096, h = 4096, gd = 8 * 128, f = 11008, t = 4;
  // QKV h x (h + 2gd), projection h x h, fc1 h x 2f (gate and up), fc2 f x h; 2 FLOPs per MAC.
  const auto ops = layer_ops(m, r, Pass::kForward);
  EXPECT_DOUBLE_EQ(sum_of(ops, OpKind::kGemm), 2.0 * s * (h * (h + 2 * gd) + h * h + 3 * h * f) / t);
  EXPECT_DOUBLE_EQ(sum_of(ops, OpKind::kAttention), 4.0 * s * s * h / t);  // query heads, not groups
  EXPECT_EQ(names(ops)[10], "fc1");
  EXPECT_EQ(names(ops)[11], "swiglu");
}

TEST(LayerOps, ParallelBlockFusesGemmsWithTheSameFlops) {
  const ModelSpec m = testing::gpt_22b();
  const ResolvedPlan seq = plan_22b();
  const ResolvedPlan par = plan_22b(plan_22b_with([](ParallelPlan& p) { p.parallel_transformer_block = true; }));
  const auto ops = layer_ops(m, par, Pass::kForward);
  EXPECT_DOUBLE_EQ(sum_flops(ops), sum_flops(layer_ops(m, seq, Pass::kForward)));
  const std::vector<std::string> expected = {
      "input_layernorm",   "qkv_fc1",           "qkv_bias", "attention_scores", "softmax",
      "attention_dropout", "attention_context", "gelu",     "proj_fc2",         "residual"};
  EXPECT_EQ(names(ops), expected);
  EXPECT_EQ(ops[1].shape.n, (3 * 6144 + 4 * 6144) / 8);  // QKV and fc1 outputs side by side
  EXPECT_EQ(ops[8].shape.k, (6144 + 4 * 6144) / 8);      // context and GeLU output side by side
  // One norm and one residual instead of two each: fewer bytes.
  EXPECT_LT(sum_bytes(ops), sum_bytes(layer_ops(m, seq, Pass::kForward)));
}

TEST(LayerOps, FlashAttentionHalvesExecutedWorkAndKeepsScoresOutOfHbm) {
  const ModelSpec m = testing::gpt_22b();
  const ResolvedPlan r = plan_22b(plan_22b_with([](ParallelPlan& p) { p.use_flash_attention = true; }));
  const auto fwd = layer_ops(m, r, Pass::kForward);
  const auto bwd = layer_ops(m, r, Pass::kBackward);
  ASSERT_EQ(fwd[2].name, "flash_attention");
  const double counted = 4.0 * kB * kS * kS * kH / kT;
  EXPECT_DOUBLE_EQ(fwd[2].flops, counted);
  EXPECT_DOUBLE_EQ(fwd[2].executed_flops, counted / 2);  // causal blocks skipped
  // Backward runs ..., proj_dgrad, proj_wgrad, flash_attention_bwd, qkv_dgrad, qkv_wgrad, input_layernorm_bwd.
  const LayerOp& back = bwd[bwd.size() - 4];
  ASSERT_EQ(back.name, "flash_attention_bwd");
  EXPECT_DOUBLE_EQ(back.executed_flops, 2.5 * counted / 2);  // scores recomputed: 5 GEMMs vs 2
  // Reads Q, K, V and writes O (each s*b*h/t bf16 with MHA) plus the fp32 log-sum-exp per row.
  const double q = kS * kB * kH / kT;
  EXPECT_DOUBLE_EQ(fwd[2].bytes, 2.0 * 4.0 * q + 4.0 * kB * (kA / kT) * kS);
  // The unfused softmax alone moves 4 bytes per score: b * a/t * s^2 scores.
  const auto unfused = layer_ops(m, plan_22b(), Pass::kForward);
  ASSERT_EQ(unfused[4].name, "softmax");
  EXPECT_DOUBLE_EQ(unfused[4].bytes, 4.0 * kB * (kA / kT) * kS * kS);
  EXPECT_LT(fwd[2].bytes, unfused[4].bytes);
}

// Megatron-LM's --use-flash-attn of 2023 (FlashAttention-1): the four core-attention ops become one
// flash_attention_1 kernel with FA2's FLOPs and bytes (the same algorithm); every other op, the
// unfused qkv bias and bias gradients included, is the unfused layer's.
TEST(LayerOps, FlashAttention1ReplacesOnlyTheCore) {
  const ModelSpec m = testing::gpt_22b();
  const ResolvedPlan fa1 =
      plan_22b(plan_22b_with([](ParallelPlan& p) { p.attention_kernel = AttentionKernel::kFlashAttention1; }));
  const ResolvedPlan fa2 =
      plan_22b(plan_22b_with([](ParallelPlan& p) { p.attention_kernel = AttentionKernel::kFlashAttention2; }));
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    std::vector<LayerOp> expected;
    for (LayerOp op : layer_ops(m, plan_22b(), pass)) {
      const bool in_core =
          op.kind == OpKind::kAttention || op.name.starts_with("softmax") || op.name.starts_with("attention_dropout");
      if (!in_core) expected.push_back(op);
    }
    std::vector<LayerOp> rest;
    for (const LayerOp& op : layer_ops(m, fa1, pass)) {
      if (op.kind != OpKind::kAttention) rest.push_back(op);
    }
    ASSERT_EQ(names(rest), names(expected));
    for (std::size_t i = 0; i < rest.size(); ++i) EXPECT_DOUBLE_EQ(rest[i].bytes, expected[i].bytes) << rest[i].name;
    const auto find = [](const std::vector<LayerOp>& ops, const std::string& name) {
      for (const LayerOp& op : ops) {
        if (op.name == name) return op;
      }
      ADD_FAILURE() << name;
      return LayerOp{};
    };
    const std::string suffix = pass == Pass::kBackward ? "_bwd" : "";
    const LayerOp one = find(layer_ops(m, fa1, pass), "flash_attention_1" + suffix);
    const LayerOp two = find(layer_ops(m, fa2, pass), "flash_attention" + suffix);
    EXPECT_DOUBLE_EQ(one.flops, two.flops);
    EXPECT_DOUBLE_EQ(one.executed_flops, two.executed_flops);
    EXPECT_DOUBLE_EQ(one.bytes, two.bytes);
  }
}

// Megatron-LM's own linear layers (megatron/core/tensor_parallel/layers.py) add the qkv bias after
// the GEMM and reduce each bias gradient over the tokens in kernels of their own; the fused kernels
// (Transformer Engine's GEMM epilogues) do both inside the GEMMs.
TEST(LayerOps, UnfusedLayersAddTheQkvBiasAndReduceEveryBiasGradient) {
  const ModelSpec m = testing::gpt_22b();
  const auto bytes_of = [](const std::vector<LayerOp>& ops, const std::string& name) {
    for (const LayerOp& op : ops) {
      if (op.name == name) return op.bytes;
    }
    return -1.0;
  };
  for (bool sp : {false, true}) {
    const ResolvedPlan r = plan_22b(plan_22b_with([&](ParallelPlan& p) { p.sequence_parallel = sp; }));
    const auto fwd = layer_ops(m, r, Pass::kForward);
    const auto bwd = layer_ops(m, r, Pass::kBackward);
    const double rows = kS * kB;                  // GEMM rows: every token of the micro-batch
    const double region = sp ? rows / kT : rows;  // rows of the residual stream on this rank
    // `output + bias`: reads and writes the qkv output (3h/t bf16 columns).
    EXPECT_DOUBLE_EQ(bytes_of(fwd, "qkv_bias"), 4.0 * rows * 3 * kH / kT);
    // Each reduction reads the gradient it sums: qkv and fc1 outputs, proj and fc2 outputs.
    EXPECT_DOUBLE_EQ(bytes_of(bwd, "qkv_bias_grad"), 2.0 * rows * 3 * kH / kT);
    EXPECT_DOUBLE_EQ(bytes_of(bwd, "fc1_bias_grad"), 2.0 * rows * 4 * kH / kT);
    EXPECT_DOUBLE_EQ(bytes_of(bwd, "proj_bias_grad"), 2.0 * region * kH);
    EXPECT_DOUBLE_EQ(bytes_of(bwd, "fc2_bias_grad"), 2.0 * region * kH);
  }
  const ResolvedPlan fused = plan_22b(plan_22b_with([](ParallelPlan& p) { p.use_flash_attention = true; }));
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const LayerOp& op : layer_ops(m, fused, pass)) {
      EXPECT_EQ(op.name.find("bias"), std::string::npos) << op.name;
    }
  }
}

TEST(LayerOps, SlidingWindowCountsTheCausalBand) {
  const ModelSpec m = testing::gpt_22b();
  const auto window = [](std::int64_t w) { return plan_22b_with([&](ParallelPlan& p) { p.sliding_window_size = w; }); };
  EXPECT_DOUBLE_EQ(attended_length(m, window(0)), kS);
  EXPECT_DOUBLE_EQ(attended_length(m, window(2048)), kS);  // the band is the whole triangle
  // Band share of the causal triangle: 1 - (1 - w/s)^2 -> w = s/2: 3/4; w = s/4: 7/16.
  EXPECT_DOUBLE_EQ(attended_length(m, window(1024)), 0.75 * kS);
  EXPECT_DOUBLE_EQ(attended_length(m, window(512)), 7.0 / 16.0 * kS);
  const double full = 4.0 * kB * kS * kS * kH / kT;
  const auto unfused = layer_ops(m, plan_22b(window(1024)), Pass::kForward);
  EXPECT_DOUBLE_EQ(sum_of(unfused, OpKind::kAttention), 0.75 * full);
  // Megatron's unfused kernel still computes the whole masked matrix.
  EXPECT_DOUBLE_EQ(sum_executed_flops(unfused) - sum_of(unfused, OpKind::kGemm), full);
  ParallelPlan p = window(1024);
  p.use_flash_attention = true;
  const auto flash = layer_ops(m, plan_22b(p), Pass::kForward);
  EXPECT_DOUBLE_EQ(flash[2].executed_flops, 0.75 * full / 2);  // only the band's blocks
}

TEST(LayerOps, RecomputePassFollowsGranularity) {
  const ModelSpec m = testing::gpt_22b();
  const auto with = [](RecomputeGranularity g, bool flash) {
    return plan_22b(plan_22b_with([&](ParallelPlan& p) {
      p.recompute_granularity = g;
      p.use_flash_attention = flash;
    }));
  };
  EXPECT_TRUE(layer_ops(m, with(RecomputeGranularity::kNone, false), Pass::kRecompute).empty());
  const auto selective = layer_ops(m, with(RecomputeGranularity::kSelective, false), Pass::kRecompute);
  const std::vector<std::string> core = {"attention_scores", "softmax", "attention_dropout", "attention_context"};
  EXPECT_EQ(names(selective), core);
  EXPECT_DOUBLE_EQ(sum_flops(selective), 4.0 * kB * kS * kS * kH / kT);
  // Megatron does not checkpoint the core attention when FlashAttention runs it (-1 or -2).
  EXPECT_TRUE(layer_ops(m, with(RecomputeGranularity::kSelective, true), Pass::kRecompute).empty());
  ParallelPlan fa1 = with(RecomputeGranularity::kSelective, false).plan;
  fa1.attention_kernel = AttentionKernel::kFlashAttention1;
  EXPECT_TRUE(layer_ops(m, plan_22b(fa1), Pass::kRecompute).empty());
  fa1.recompute_granularity = RecomputeGranularity::kFull;
  EXPECT_EQ(names(layer_ops(m, plan_22b(fa1), Pass::kRecompute)), names(layer_ops(m, plan_22b(fa1), Pass::kForward)));
  const ResolvedPlan full = with(RecomputeGranularity::kFull, false);
  EXPECT_EQ(names(layer_ops(m, full, Pass::kRecompute)), names(layer_ops(m, full, Pass::kForward)));
  EXPECT_DOUBLE_EQ(sum_flops(layer_ops(m, full, Pass::kRecompute)), sum_flops(layer_ops(m, full, Pass::kForward)));
}

TEST(LayerOps, SequenceParallelShardsNormsAndResiduals) {
  const ModelSpec m = testing::gpt_22b();
  const auto plain = layer_ops(m, plan_22b(), Pass::kForward);
  const auto sp =
      layer_ops(m, plan_22b(plan_22b_with([](ParallelPlan& p) { p.sequence_parallel = true; })), Pass::kForward);
  // LayerNorm reads and writes s*b*h bf16 values, s*b*h/t with sequence parallelism.
  EXPECT_DOUBLE_EQ(plain[0].bytes, 4.0 * kS * kB * kH);
  EXPECT_DOUBLE_EQ(sp[0].bytes, 4.0 * kS * kB * kH / kT);
  // Bias-dropout-add: branch, residual, output (2 bytes each) and a 1-byte mask.
  ASSERT_EQ(sp[8].name, "attention_residual");
  EXPECT_DOUBLE_EQ(sp[8].bytes, 7.0 * kS * kB * kH / kT);
  EXPECT_DOUBLE_EQ(sum_flops(sp), sum_flops(plain));
}

TEST(LayerOps, EmbeddingAndOutputOps) {
  const ModelSpec m = testing::gpt_22b();
  const ResolvedPlan r = plan_22b();
  const auto out = output_ops(m, r, Pass::kForward);
  ASSERT_EQ(names(out), (std::vector<std::string>{"final_layernorm", "logits", "cross_entropy"}));
  EXPECT_DOUBLE_EQ(out[1].flops, 2.0 * kS * kB * kH * 51200 / kT);  // padded vocab 51200 at tp 8
  EXPECT_DOUBLE_EQ(sum_flops(output_ops(m, r, Pass::kBackward)), 2.0 * sum_flops(out));
  EXPECT_DOUBLE_EQ(sum_flops(embedding_ops(m, r, Pass::kForward)), 0.0);
  EXPECT_FALSE(embedding_ops(m, r, Pass::kBackward).empty());
  EXPECT_TRUE(output_ops(m, r, Pass::kRecompute).empty());
  EXPECT_TRUE(embedding_ops(m, r, Pass::kRecompute).empty());
}

}  // namespace
}  // namespace megasim::models
