#include "models/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "models/layer_ops_internal.h"

namespace megasim::models {
namespace layer_ops_detail {

Dims dims_of(const ModelSpec& model, const ResolvedPlan& plan) {
  const ParallelPlan& p = plan.plan;
  Dims x{};
  x.b = p.micro_batch_size;
  x.s = model.seq_length;
  x.h = model.hidden_size;
  x.t = plan.tp;
  x.a = model.num_attention_heads;
  x.g = query_groups(model);
  x.d = kv_channels(model);
  x.f = ffn_hidden(model);
  x.f1 = fc1_width(model);
  x.vocab = plan.padded_vocab_size;
  x.cp = plan.cp;
  x.cp_comm = p.cp_comm_type;
  x.fp8 = uses_fp8(p);
  x.mla = model.multi_latent_attention;
  x.q_lora = model.q_lora_rank;
  x.kv_lora = model.kv_lora_rank;
  x.qk = model.qk_head_dim;
  x.qk_rope = model.qk_pos_emb_head_dim;
  x.v = model.v_head_dim;
  // Q K^T over qk + RoPE columns and P V over v: the 4 s L d count with d their mean.
  if (x.mla) x.d = (x.qk + x.qk_rope + x.v) / 2;
  x.tokens = x.s / x.cp * x.b;
  x.dropout = model.hidden_dropout > 0;
  x.region_tokens = p.sequence_parallel ? x.tokens / x.t : x.tokens;
  x.attended = attended_length(model, p);
  x.kernel = attention_kernel_of(p);
  x.fused = p.use_flash_attention;
  x.parallel_block = p.parallel_transformer_block;
  x.rope = model.position_embedding_type == PositionEmbedding::kRope;
  return x;
}

double dbl(std::int64_t v) {
  return static_cast<double>(v);
}

LayerOp gemm(std::string name, OpKind kind, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
  const double flops = 2.0 * dbl(m) * dbl(n) * dbl(k) * dbl(batch);
  const double bytes = 2.0 * dbl(batch) * (dbl(m) * dbl(k) + dbl(k) * dbl(n) + dbl(m) * dbl(n));
  return LayerOp{std::move(name), kind, GemmShape{m, n, k, batch}, flops, flops, bytes};
}

LayerOp memory_op(std::string name, OpKind kind, double bytes) {
  return LayerOp{std::move(name), kind, GemmShape{0, 0, 0, 0}, 0.0, 0.0, bytes};
}

// Y[m x n] = X[m x k] W[k x n]; backward: dX = dY W^T (m, k, n), then dW = X^T dY (k, n, m).
OpPair linear(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k) {
  return {gemm(name, OpKind::kGemm, m, n, k),
          {gemm(name + "_dgrad", OpKind::kGemm, m, k, n), gemm(name + "_wgrad", OpKind::kGemm, k, n, m)}};
}

OpPair elementwise(const std::string& name, OpKind kind, double forward_bytes, double backward_bytes) {
  return {memory_op(name, kind, forward_bytes), {memory_op(name + "_bwd", kind, backward_bytes)}};
}

LayerOp as_fp8(LayerOp op) {
  op.bytes = fp8_gemm_bytes(op.shape);
  op.fp8 = true;
  return op;
}

void model_linear(const Dims& x, const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k,
                  std::vector<OpPair>& out) {
  OpPair pair = linear(name, m, n, k);
  if (!x.fp8) {
    out.push_back(std::move(pair));
    return;
  }
  // Quantize the input (forward) and the output gradient (backward), each with its transpose.
  out.push_back(elementwise(name + "_fp8_cast", OpKind::kElementwise, 4.0 * dbl(m) * dbl(k), 4.0 * dbl(m) * dbl(n)));
  pair.forward = as_fp8(std::move(pair.forward));
  for (LayerOp& op : pair.backward) op = as_fp8(std::move(op));
  out.push_back(std::move(pair));
}

namespace {

// A batched attention product: counted FLOPs follow the attended length of the convention.
LayerOp attention_gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                       double counted) {
  LayerOp op = gemm(std::move(name), OpKind::kAttention, m, n, k, batch);
  op.flops = counted;
  return op;
}

// Megatron's unfused core attention: S = Q K^T, softmax, dropout, O = P V, the whole masked s x s
// matrix computed and kept in HBM whatever the window.
void unfused_core(const Dims& x, std::vector<OpPair>& out) {
  const std::int64_t batch = x.b * x.a / x.t;
  const double counted = 2.0 * dbl(batch) * dbl(x.s) * x.attended * dbl(x.d);  // one product
  const double elements = dbl(batch) * dbl(x.s) * dbl(x.s);                    // score matrix entries
  auto core = [&](OpPair pair) {
    pair.module = kRecomputeCoreAttn;
    out.push_back(std::move(pair));
  };
  core({attention_gemm("attention_scores", x.s, x.s, x.d, batch, counted),
        {attention_gemm("attention_scores_dquery", x.s, x.d, x.s, batch, counted),
         attention_gemm("attention_scores_dkey", x.s, x.d, x.s, batch, counted)}});
  core(elementwise("softmax", OpKind::kElementwise, 4.0 * elements, 6.0 * elements));
  core(elementwise("attention_dropout", OpKind::kElementwise, 5.0 * elements, 5.0 * elements));
  core({attention_gemm("attention_context", x.s, x.d, x.s, batch, counted),
        {attention_gemm("attention_context_dprobs", x.s, x.s, x.d, batch, counted),
         attention_gemm("attention_context_dvalues", x.s, x.d, x.s, batch, counted)}});
}

// FlashAttention-1 or -2: one kernel, no score matrix in HBM; it stores the log-sum-exp (fp32) per
// row. Both skip the masked blocks and recompute the scores in backward, so they execute the same
// FLOPs (op_time.h times them at their own efficiencies); the names tell the kernels apart.
void flash_core(const Dims& x, std::vector<OpPair>& out) {
  std::int64_t batch = x.b * x.a / x.t;
  const auto len = static_cast<std::int64_t>(std::llround(x.attended));
  const double counted = 4.0 * dbl(batch) * dbl(x.s) * x.attended * dbl(x.d) / dbl(x.cp);
  // Context parallelism: a2a attends heads / cp over the whole sequence; p2p and all_gather attend
  // the local queries, 1 / cp of the causal pairs.
  const bool heads_split = x.cp > 1 && x.cp_comm == CpCommType::kA2a;
  if (heads_split) batch /= x.cp;
  const std::int64_t split = x.cp > 1 && !heads_split ? x.cp : 1;
  const double q = dbl(x.tokens * x.h / x.t);                            // Q or O or dO elements
  const double kv = dbl(x.tokens * x.g * x.d / x.t);                     // K or V elements
  const double lse = 4.0 * dbl(x.b * x.a / x.t) * dbl(x.s) / dbl(x.cp);  // the rank's queries
  const std::string name = x.kernel == AttentionKernel::kFlashAttention1 ? "flash_attention_1" : "flash_attention";
  LayerOp forward{name,    OpKind::kAttention, GemmShape{x.s, len, x.d, batch},
                  counted, counted / 2.0,      2.0 * (2.0 * q + 2.0 * kv) + lse,
                  split};
  LayerOp backward{name + "_bwd", OpKind::kAttention,  GemmShape{x.s, len, x.d, batch},
                   2.0 * counted, 2.5 * counted / 2.0, 2.0 * (4.0 * q + 4.0 * kv) + lse,
                   split};
  out.push_back({std::move(forward), {std::move(backward)}, kRecomputeCoreAttn});
}

}  // namespace

void core_attention(const Dims& x, std::vector<OpPair>& out) {
  if (x.kernel == AttentionKernel::kUnfused) {
    unfused_core(x, out);
  } else {
    flash_core(x, out);
  }
}

// Forward bytes of a norm: read and write bf16; backward reads x and dy, writes dx.
OpPair norm(const std::string& name, const Dims& x) {
  const double e = dbl(x.region_tokens * x.h);
  return elementwise(name, OpKind::kNorm, 4.0 * e, 6.0 * e);
}

// Fused bias + dropout + residual add: reads branch and residual, writes the sum and a 1-byte mask;
// backward reads dy and the mask and writes the branch gradient (the residual's is dy itself).
// Without dropout, no mask.
OpPair residual(const std::string& name, const Dims& x) {
  const double e = dbl(x.region_tokens * x.h);
  const double mask = x.dropout ? 1.0 : 0.0;
  return elementwise(name, OpKind::kElementwise, (6.0 + mask) * e, (4.0 + mask) * e);
}

OpPair activation(const std::string& prefix, double rows, std::int64_t columns, bool glu) {
  const double e = rows * dbl(columns);
  return elementwise(prefix + (glu ? "swiglu" : "gelu"), OpKind::kElementwise, glu ? 6.0 * e : 4.0 * e,
                     glu ? 10.0 * e : 6.0 * e);
}

namespace {

// GeLU reads and writes f columns; SwiGLU reads 2f (gate, up) and writes f.
OpPair mlp_activation(const Dims& x) {
  return activation("", dbl(x.tokens), x.f / x.t, x.f1 != x.f);
}

// The linear layers' biases where Megatron-LM's own kernels handle them (without the fused kernels
// of use_flash_attention, whose GEMMs add the bias and reduce its gradient in their epilogues, as
// Transformer Engine's do). megatron/core/tensor_parallel/layers.py: a column-parallel layer that
// keeps its bias (qkv) adds it after the GEMM (`output + bias`: read and write the bf16 output) and
// reduces its gradient over the tokens in backward (`grad_output.sum(dim=0)`: read the output
// gradient). The layers that hand their bias on (fc1 into the fused bias-GeLU, proj and fc2 into
// the fused bias-dropout-add) still get its gradient from autograd's reduction of the broadcast
// add: a read of that gradient, per token row (a sequence shard with SP) and column.
OpPair bias_add(const std::string& name, std::int64_t rows, std::int64_t columns) {
  const double e = dbl(rows * columns);
  return {memory_op(name, OpKind::kElementwise, 4.0 * e), {memory_op(name + "_grad", OpKind::kElementwise, 2.0 * e)}};
}

// Appends the gradient reduction of a bias handed on to `pair`'s fused kernel to its backward.
OpPair with_bias_gradient(OpPair pair, const std::string& name, std::int64_t rows, std::int64_t columns) {
  pair.backward.push_back(memory_op(name, OpKind::kElementwise, 2.0 * dbl(rows * columns)));
  return pair;
}

}  // namespace

// MLA's projections (Megatron core's MLASelfAttention): the hidden state down to the query latent
// (or straight up to the queries without one) and to the key-value latent with the shared RoPE key,
// each latent LayerNorm'd (the down-projections whole on every TP rank), then up to the heads' queries
// (qk + RoPE each) and keys and values (qk + v each, a TP rank's heads / tp).
void mla_projections(const Dims& x, std::vector<OpPair>& ops) {
  const std::int64_t heads = x.a / x.t;
  const auto latent_norm = [&](const std::string& name, std::int64_t width) {
    const double e = dbl(x.tokens * width);
    ops.push_back(elementwise(name, OpKind::kNorm, 4.0 * e, 6.0 * e));
  };
  if (x.q_lora > 0) {
    model_linear(x, "q_down_proj", x.tokens, x.q_lora, x.h, ops);
    latent_norm("q_layernorm", x.q_lora);
    model_linear(x, "q_up_proj", x.tokens, heads * (x.qk + x.qk_rope), x.q_lora, ops);
  } else {
    model_linear(x, "q_proj", x.tokens, heads * (x.qk + x.qk_rope), x.h, ops);
  }
  model_linear(x, "kv_down_proj", x.tokens, x.kv_lora + x.qk_rope, x.h, ops);
  latent_norm("kv_layernorm", x.kv_lora);
  model_linear(x, "kv_up_proj", x.tokens, heads * (x.qk + x.v), x.kv_lora, ops);
}

std::vector<OpPair> layer_pairs(const Dims& x, bool with_mlp) {
  std::vector<OpPair> ops;
  const std::int64_t qkv = (x.h + 2 * x.g * x.d) / x.t;
  // Bias kernels of their own only without the fused kernels (bias_add above).
  const auto add_qkv_bias = [&] {
    if (!x.fused) ops.push_back(bias_add("qkv_bias", x.tokens, qkv));
  };
  const auto handed_on = [&](OpPair pair, const std::string& name, std::int64_t rows, std::int64_t columns) {
    return x.fused ? pair : with_bias_gradient(std::move(pair), name, rows, columns);
  };
  ops.push_back(norm("input_layernorm", x));
  if (x.parallel_block) {  // PaLM/GPT-J: x + Attn(LN(x)) + MLP(LN(x)) with fused input and output GEMMs
    model_linear(x, "qkv_fc1", x.tokens, qkv + x.f1 / x.t, x.h, ops);
    add_qkv_bias();
    core_attention(x, ops);
    ops.push_back(handed_on(mlp_activation(x), "fc1_bias_grad", x.tokens, x.f1 / x.t));
    model_linear(x, "proj_fc2", x.tokens, x.h, (x.h + x.f) / x.t, ops);
    ops.push_back(handed_on(residual("residual", x), "proj_fc2_bias_grad", x.region_tokens, x.h));
    return ops;
  }
  if (x.mla) {
    mla_projections(x, ops);
  } else {
    model_linear(x, "qkv", x.tokens, qkv, x.h, ops);
    add_qkv_bias();
  }
  core_attention(x, ops);
  model_linear(x, "proj", x.tokens, x.h, (x.mla ? x.a * x.v : x.h) / x.t, ops);
  ops.push_back(handed_on(residual("attention_residual", x), "proj_bias_grad", x.region_tokens, x.h));
  ops.push_back(norm("post_attention_layernorm", x));
  if (!with_mlp) return ops;
  model_linear(x, "fc1", x.tokens, x.f1 / x.t, x.h, ops);
  ops.push_back(handed_on(mlp_activation(x), "fc1_bias_grad", x.tokens, x.f1 / x.t));
  model_linear(x, "fc2", x.tokens, x.h, x.f / x.t, ops);
  ops.push_back(handed_on(residual("mlp_residual", x), "fc2_bias_grad", x.region_tokens, x.h));
  return ops;
}

void tag_recompute_modules(std::vector<OpPair>& pairs) {
  for (OpPair& pair : pairs) {
    const std::string& name = pair.forward.name;
    const auto is = [&](std::initializer_list<const char*> names) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
    };
    if (pair.forward.kind == OpKind::kNorm) pair.module = kRecomputeLayernorm;
    if (is({"q_up_proj", "kv_up_proj", "q_up_proj_fp8_cast", "kv_up_proj_fp8_cast"})) pair.module = kRecomputeMlaUpProj;
    if (is({"fc1", "fc2", "gelu", "swiglu", "fc1_fp8_cast", "fc2_fp8_cast"})) pair.module = kRecomputeMlp;
    if (is({"expert_gelu", "expert_swiglu"})) pair.module = kRecomputeMoeAct;
  }
}

std::uint32_t selective_modules(const ParallelPlan& plan) {
  if (plan.recompute_granularity != RecomputeGranularity::kSelective) return 0;
  std::uint32_t modules = plan.recompute_modules;
  if (uses_flash_kernel(plan)) modules &= ~static_cast<std::uint32_t>(kRecomputeCoreAttn);
  return modules;
}

std::vector<LayerOp> select(std::vector<OpPair> pairs, Pass pass, std::uint32_t modules) {
  std::vector<LayerOp> out;
  if (pass == Pass::kBackward) {
    for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) {
      for (LayerOp& op : it->backward) out.push_back(std::move(op));
    }
    return out;
  }
  for (OpPair& pair : pairs) {
    if ((pair.module & modules) != 0 || modules == ~0U) out.push_back(std::move(pair.forward));
  }
  return out;
}

}  // namespace layer_ops_detail

using namespace layer_ops_detail;

double attended_length(const ModelSpec& model, const ParallelPlan& plan) {
  const double s = dbl(model.seq_length);
  if (plan.sliding_window_size == 0) return s;
  const double uncovered = 1.0 - dbl(plan.sliding_window_size) / s;
  return s * (1.0 - uncovered * uncovered);
}

std::vector<LayerOp> layer_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass) {
  const Dims x = dims_of(model, plan);
  if (pass != Pass::kRecompute) return select(layer_pairs(x, true), pass);
  switch (plan.plan.recompute_granularity) {
    case RecomputeGranularity::kFull:
      return select(layer_pairs(x, true), Pass::kForward);
    case RecomputeGranularity::kSelective: {
      const std::uint32_t modules = selective_modules(plan.plan);
      if (modules == 0) return {};
      std::vector<OpPair> pairs = layer_pairs(x, true);
      tag_recompute_modules(pairs);
      return select(std::move(pairs), Pass::kForward, modules);
    }
    case RecomputeGranularity::kNone:
      break;
  }
  return {};
}

std::vector<LayerOp> embedding_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass) {
  if (pass == Pass::kRecompute) return {};
  const Dims x = dims_of(model, plan);
  const double full = dbl(x.tokens * x.h);
  const double region = dbl(x.region_tokens * x.h);
  // Lookup: on average tokens/tp rows fall in this rank's vocabulary slice; every rank writes a
  // full (partly zero) output for the TP reduction. Backward scatter-adds those rows into the fp32
  // main gradient (read and write 4 bytes each).
  std::vector<OpPair> pairs;
  pairs.push_back(elementwise("embedding", OpKind::kElementwise, 2.0 * full / dbl(x.t) + 2.0 * full,
                              2.0 * full + 8.0 * full / dbl(x.t)));
  // Position add (learned absolute only) and dropout: read 2 (+2), write 2, mask 1 byte; backward
  // reads dy and the mask, writes dx. Without dropout only the position add is left (its gradient a
  // read of dy), and with RoPE nothing.
  if (x.dropout) {
    pairs.push_back(
        elementwise("embedding_dropout", OpKind::kElementwise, (x.rope ? 5.0 : 7.0) * region, 5.0 * region));
  } else if (!x.rope) {
    pairs.push_back(elementwise("position_add", OpKind::kElementwise, 6.0 * region, 2.0 * region));
  }
  return select(std::move(pairs), pass);
}

std::vector<LayerOp> output_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass) {
  if (pass == Pass::kRecompute) return {};
  const Dims x = dims_of(model, plan);
  const double logits = dbl(x.tokens * x.vocab / x.t);
  std::vector<OpPair> pairs;
  pairs.push_back(norm("final_layernorm", x));
  pairs.push_back(linear("logits", x.tokens, x.vocab / x.t, x.h));
  // Vocab-parallel cross-entropy in fp32: reads bf16 logits, keeps fp32 softmax; backward reads it
  // and writes the bf16 logit gradient.
  pairs.push_back(elementwise("cross_entropy", OpKind::kElementwise, 6.0 * logits, 6.0 * logits));
  return select(std::move(pairs), pass);
}

double sum_flops(std::span<const LayerOp> ops) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.flops;
  return total;
}

double sum_executed_flops(std::span<const LayerOp> ops) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.executed_flops;
  return total;
}

double sum_bytes(std::span<const LayerOp> ops) {
  double total = 0;
  for (const LayerOp& op : ops) total += op.bytes;
  return total;
}

}  // namespace megasim::models
