// Pieces of layer_ops.cc shared with the MoE layer (layer_ops_moe.cc). Not a public header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/layer_ops.h"

namespace megasim::models::layer_ops_detail {

// A forward op with the ops that compute its gradients, in the order backward runs them.
struct OpPair {
  LayerOp forward;
  std::vector<LayerOp> backward;
  std::uint32_t module = 0;  // the RecomputeModule (plan.h) selective recompute reruns it for
};

// Sizes of one micro-batch on one TP rank.
struct Dims {
  std::int64_t b, s, h, t, a, g, d, f, f1, vocab;
  std::int64_t tokens;         // s * b / cp: GEMM rows
  std::int64_t region_tokens;  // tokens seen by norms, dropouts, residuals: s*b/t with SP
  double attended;             // L of the convention
  AttentionKernel kernel;      // of the attention core (attention_kernel_of)
  bool fused;                  // use_flash_attention's fused LayerNorm/GeLU and GEMM bias epilogues
  bool parallel_block, rope;
  bool dropout;     // hidden_dropout > 0: the residual and embedding dropouts write and keep masks
  std::int64_t cp;  // context-parallel size: tokens are the rank's s / cp, s stays the whole sequence
  CpCommType cp_comm;
  bool fp8;  // the linear layers' GEMMs in FP8 (plan.fp8)
  // Multi-head latent attention (model_spec.h): the latents' ranks, a head's query/key width
  // (qk + RoPE) and value width; d is then their mean (the attention products' FLOPs per head).
  bool mla;
  std::int64_t q_lora, kv_lora, qk, qk_rope, v;
};

Dims dims_of(const ModelSpec& model, const ResolvedPlan& plan);
double dbl(std::int64_t v);

// The op rules of layer_ops.h: a GEMM of `batch` products, a memory-bound op, a linear layer with its
// data- and weight-gradient GEMMs, an elementwise op with its backward.
LayerOp gemm(std::string name, OpKind kind, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1);
LayerOp memory_op(std::string name, OpKind kind, double bytes);
OpPair linear(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k);
// A linear layer of the transformer (FP8 under plan.fp8, with its casts before it in `out`).
void model_linear(const Dims& x, const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k,
                  std::vector<OpPair>& out);
// Makes a GEMM an FP8 one: its two inputs 1 byte each, its output bf16.
LayerOp as_fp8(LayerOp op);
OpPair elementwise(const std::string& name, OpKind kind, double forward_bytes, double backward_bytes);
// GeLU (reads and writes `columns`) or SwiGLU (reads 2x, writes `columns`) over `rows` tokens.
OpPair activation(const std::string& prefix, double rows, std::int64_t columns, bool glu);
OpPair norm(const std::string& name, const Dims& x);
// The attention core: FlashAttention's one kernel or Megatron's four unfused ops.
void core_attention(const Dims& x, std::vector<OpPair>& out);
OpPair residual(const std::string& name, const Dims& x);

// A dense layer's ops, from its input LayerNorm through the post-attention LayerNorm, and with
// `with_mlp` its MLP and residual too (the parallel block always has both).
std::vector<OpPair> layer_pairs(const Dims& x, bool with_mlp);
// The forward ops of `pairs` (with `modules`, only the pairs of those RecomputeModule bits), or
// their backward ops in reverse order.
std::vector<LayerOp> select(std::vector<OpPair> pairs, Pass pass, std::uint32_t modules = ~0U);
// Tags each pair with the recompute module it belongs to, by its forward op's name: LayerNorms,
// MLA's up-projections, a dense MLP's GEMMs and activation, the experts' activation.
void tag_recompute_modules(std::vector<OpPair>& pairs);
// The RecomputeModule bits selective recompute reruns under `plan`: its recompute_modules, the
// attention core only with the unfused kernel; 0 for other granularities.
std::uint32_t selective_modules(const ParallelPlan& plan);

}  // namespace megasim::models::layer_ops_detail
