// The compute ops of one micro-batch on one tensor-parallel rank, in execution order: what the
// cost model times and what the FLOP accounting sums. Collectives (TP all-reduce, or all-gather and
// reduce-scatter with sequence parallelism) are not ops here; the workload builder places them.
//
// Counting rules (the convention of models/flops.h):
//  - a GEMM C[m x n] = A[m x k] * B[k x n] repeated `batch` times does 2*m*n*k*batch FLOPs and moves
//    2*batch*(m*k + k*n + m*n) bytes (bf16 operands, each read or written once);
//  - attention counts every query against L keys, L = s (Korthikanti et al. 2022 count the full
//    s x s score matrix, not the causal half). With a sliding window w, L is the causal band's
//    share of that count: the band {j <= i, i - j < w} covers 1 - (1 - w/s)^2 of the causal
//    triangle (continuous approximation), so L = s * (1 - (1 - w/s)^2) = 2w - w^2/s (L = s at w = s);
//  - executed FLOPs equal counted FLOPs except in attention. Megatron's unfused attention computes
//    the whole masked s x s score matrix, window or not (as compute_cost.h's kUnfused).
//    FlashAttention (-1 and -2, plan.attention_kernel) skips fully masked blocks, so it does half
//    the counted work (the causal triangle, or the band), and its backward recomputes the scores:
//    5 GEMMs against the forward's 2, i.e. 2.5x the forward instead of 2x;
//  - backward of a GEMM = data gradient + weight gradient = 2x forward; elementwise ops and norms
//    count no FLOPs (memory-bound: only their bytes matter), dropout masks are 1 byte per element;
//  - with sequence parallelism the LayerNorms, dropouts and residual adds work on s/t tokens;
//  - with plan.fp8 the linear layers' GEMMs (qkv, proj, fc1, fc2, experts, shared experts) are FP8:
//    their inputs 1 byte, output bf16, and Transformer Engine's casts are their own memory-bound
//    ops, "<name>_fp8_cast": forward quantizes the input and writes its transpose for the weight
//    gradient (read 2, write 1 + 1 bytes per input element), backward the output gradient likewise
//    (the weights' casts run once per step and are left out);
//  - with context parallelism (cp ranks) every op works on the rank's s/cp tokens; its attention
//    evaluates its local queries against all s keys: cp_comm_type a2a as heads / cp over the whole
//    sequence, p2p and all_gather as 1/cp of the causal attention (context_split), load-balanced.
// The lists depend only on (model, plan): build them once per plan, not per rank.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/model_spec.h"
#include "models/moe.h"
#include "models/plan.h"

namespace megasim::models {

enum class OpKind : std::uint8_t { kGemm, kAttention, kElementwise, kNorm };
// kRecompute: forward ops run again in backward (selective: the attention core; full: the layer).
enum class Pass : std::uint8_t { kForward, kBackward, kRecompute };

// Shapes use compute_cost.h's GemmShape (C[m x n] = A[m x k] * B[k x n], `batch` products; for
// attention batch = micro-batch x heads / tp, and for FlashAttention the shape of Q * K^T); all
// zero for elementwise and norm ops.
struct LayerOp {
  std::string name;
  OpKind kind = OpKind::kElementwise;
  GemmShape shape;
  double flops = 0;           // counted by the FLOP convention (MFU/HFU)
  double executed_flops = 0;  // done by the kernel (timing)
  double bytes = 0;           // HBM bytes read plus written
  // A context-parallel rank's attention with p2p or all_gather: the kernel evaluates 1 / context_split
  // of the (q, k) pairs of the shape (its load-balanced share of the causal attention); 1 otherwise.
  std::int64_t context_split = 1;
  // A GEMM of FP8 operands (plan.fp8): timed at the GPU's FP8 peak; bytes count 1-byte inputs.
  bool fp8 = false;
};

// One transformer layer. Recompute pass: empty for recompute_granularity none, and for selective
// with FlashAttention-1 or -2 (Megatron does not checkpoint the core attention when FlashAttention
// is on). The attention core is one "flash_attention" ("flash_attention_1") op and its "_bwd" with
// a FlashAttention kernel, else Megatron's four unfused ops; the LayerNorm, GeLU and bias kernels
// follow use_flash_attention alone (its fused kernels).
std::vector<LayerOp> layer_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass);
// An MoE layer (moe.h; layer_ops_moe.cc): the dense layer's attention, then the router (a GEMM
// h -> num_experts and its softmax and top-k), the permutation of the rank's tokens by expert, the
// rank's num_experts / ep experts (one grouped GEMM per projection with moe_grouped_gemm, else one
// GEMM per expert) on its share of the routed tokens, the unpermutation that weights and sums each
// token's k outputs, the shared expert, and the residual. The experts execute the busiest
// expert-parallel rank's tokens (expert_load_factor): it sets the pace, since the combine waits
// for it. Their counted FLOPs are the balanced share of the tokens the experts keep: the
// convention counts every routed token once per chosen expert (k x the expert MLP per token), the
// imbalance aside, the tokens a capacity factor drops left out.
std::vector<LayerOp> moe_layer_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass);
// The busiest expert-parallel rank's routed tokens over its balanced share, and the fraction of
// the routed tokens the experts keep (router_load for the ep x etp ranks that feed one set of
// experts, each with its micro-batch's tokens).
RouterLoad expert_router_load(const ModelSpec& model, const ResolvedPlan& plan);
inline double expert_load_factor(const ModelSpec& model, const ResolvedPlan& plan) {
  return expert_router_load(model, plan).busiest;
}

// First pipeline stage, before its layers: word (+ position) embedding lookup and dropout.
std::vector<LayerOp> embedding_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass);
// Last pipeline stage, after its layers: final LayerNorm, logits GEMM (padded vocab / tp columns)
// and the vocab-parallel cross-entropy. Empty for the recompute pass.
std::vector<LayerOp> output_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass);

// Attended keys per query under the convention above (double: windows give fractional values).
double attended_length(const ModelSpec& model, const ParallelPlan& plan);

double sum_flops(std::span<const LayerOp> ops);
double sum_executed_flops(std::span<const LayerOp> ops);
double sum_bytes(std::span<const LayerOp> ops);

}  // namespace megasim::models
