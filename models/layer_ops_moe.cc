// The ops of an MoE layer (layer_ops.h's moe_layer_ops), after Megatron-LM core's MoELayer
// (megatron/core/transformer/moe/moe_layer.py): TopKRouter, the token dispatchers of
// token_dispatcher.py (permute / unpermute of moe_utils.py), GroupedMLP or SequentialMLP, and
// SharedExpertMLP. Byte counts are bf16 tensors read plus written; the router's logits and
// probabilities are fp32.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "models/layer_ops.h"
#include "models/layer_ops_internal.h"
#include "models/moe.h"

namespace megasim::models {
namespace {

using namespace layer_ops_detail;

constexpr double kFp32 = 4;
constexpr double kIndexBytes = 8;  // int64 expert indices

// The experts' sizes on one GPU.
struct ExpertDims {
  std::int64_t experts = 0;  // num_experts
  std::int64_t local = 0;    // experts on this rank: num_experts / ep
  std::int64_t topk = 0;
  std::int64_t ffn = 0, fc1 = 0;  // one expert's widths on this GPU (over etp)
  double balanced_rows = 0;       // routed tokens this GPU computes when balanced: T x k x etp, kept ones
  double rows = 0;                // the busiest rank's: balanced_rows x the load factor
  double gathered = 0;            // allgather dispatcher: tokens gathered over ep x etp
  bool alltoall = false, grouped = false, glu = false, fp8 = false;
};

ExpertDims expert_dims(const ModelSpec& model, const ResolvedPlan& plan, const Dims& x) {
  ExpertDims e;
  e.experts = model.num_experts;
  e.local = model.num_experts / plan.ep;
  e.topk = model.moe_router_topk;
  e.ffn = moe_ffn_hidden(model) / plan.etp;
  e.fc1 = moe_fc1_width(model) / plan.etp;
  const RouterLoad load = expert_router_load(model, plan);
  e.balanced_rows = dbl(x.region_tokens) * dbl(e.topk) * dbl(plan.etp) * load.kept;
  e.rows = dbl(x.region_tokens) * dbl(e.topk) * dbl(plan.etp) * load.busiest;
  e.gathered = dbl(x.region_tokens) * dbl(plan.ep * plan.etp);
  e.alltoall = plan.plan.moe_token_dispatcher_type != MoeTokenDispatcher::kAllgather;  // flex permutes too
  e.grouped = plan.plan.moe_grouped_gemm;
  e.glu = model.activation == Activation::kSwiglu;
  e.fp8 = x.fp8;
  return e;
}

// An expert projection Y = X W over the rank's experts, each expert's X of m rows: timed at the
// busiest rank's rows, counted at the balanced ones. Grouped: one GEMM of `local` products; else
// one GEMM per expert (SequentialMLP), listed one after the other.
void expert_linear(const std::string& name, const ExpertDims& e, std::int64_t n, std::int64_t k,
                   std::vector<OpPair>& out) {
  const double balanced = e.balanced_rows / dbl(e.local);
  const auto rows = std::max<std::int64_t>(1, std::llround(e.rows / dbl(e.local)));
  const std::int64_t batch = e.grouped ? e.local : 1;
  const std::int64_t kernels = e.grouped ? 1 : e.local;
  const auto counted = [&](LayerOp op) {
    op.flops = 2.0 * balanced * dbl(n) * dbl(k) * dbl(batch);
    return e.fp8 ? as_fp8(std::move(op)) : op;
  };
  if (e.fp8) {  // the casts of the rank's rows (layer_ops.h's FP8 rule)
    out.push_back(elementwise(name + "_fp8_cast", OpKind::kElementwise, 4.0 * e.rows * dbl(k), 4.0 * e.rows * dbl(n)));
  }
  for (std::int64_t i = 0; i < kernels; ++i) {
    out.push_back({counted(gemm(name, OpKind::kGemm, rows, n, k, batch)),
                   {counted(gemm(name + "_dgrad", OpKind::kGemm, rows, k, n, batch)),
                    counted(gemm(name + "_wgrad", OpKind::kGemm, k, n, rows, batch))}});
  }
}

std::vector<OpPair> moe_pairs(const ModelSpec& model, const ResolvedPlan& plan) {
  const Dims x = dims_of(model, plan);
  const ExpertDims e = expert_dims(model, plan, x);
  std::vector<OpPair> ops = layer_pairs(x, false);
  const double t = dbl(x.region_tokens);
  const double h = dbl(x.h);
  // Router: logits [T x E] (the GEMM), then softmax and top-k in fp32: read the logits, write the
  // probabilities, the k chosen probabilities and indices; backward reads and writes [T x E].
  ops.push_back(linear("router", x.region_tokens, e.experts, x.h));
  const double logits = t * dbl(e.experts);
  ops.push_back(elementwise("router_topk", OpKind::kElementwise,
                            2.0 * kFp32 * logits + (kFp32 + kIndexBytes) * t * dbl(e.topk), 2.0 * kFp32 * logits));
  // Permute: every (token, expert) pair becomes a row, grouped by expert. alltoall permutes the
  // rank's T tokens into T x k rows; allgather selects the rank's rows out of the gathered tokens.
  // Backward scatters the rows' gradients back (the same bytes).
  const double permuted = (e.alltoall ? t + t * dbl(e.topk) : e.gathered + e.rows) * 2.0 * h;
  ops.push_back(elementwise("permute", OpKind::kElementwise, permuted, permuted));
  expert_linear("expert_fc1", e, e.fc1, x.h, ops);
  ops.push_back(activation("expert_", e.rows, e.ffn, e.glu));
  expert_linear("expert_fc2", e, x.h, e.ffn, ops);
  // Unpermute: weight each row by its probability and sum a token's k rows (read the rows and the
  // probabilities, write the tokens); backward the reverse.
  const double unpermuted = (t * dbl(e.topk) + t) * 2.0 * h + kFp32 * t * dbl(e.topk);
  ops.push_back(elementwise("unpermute", OpKind::kElementwise, unpermuted, unpermuted));
  if (model.moe_shared_expert_intermediate_size > 0) {
    const std::int64_t f = model.moe_shared_expert_intermediate_size / x.t;
    model_linear(x, "shared_expert_fc1", x.tokens, shared_expert_fc1_width(model) / x.t, x.h, ops);
    ops.push_back(activation("shared_expert_", dbl(x.tokens), f, e.glu));
    model_linear(x, "shared_expert_fc2", x.tokens, x.h, f, ops);
  }
  ops.push_back(residual("mlp_residual", x));
  return ops;
}

}  // namespace

RouterLoad expert_router_load(const ModelSpec& model, const ResolvedPlan& plan) {
  const double tokens = static_cast<double>(plan.local_tokens(model.seq_length));
  const double region = plan.plan.sequence_parallel ? tokens / static_cast<double>(plan.tp) : tokens;
  const double assignments = region * static_cast<double>(plan.ep * plan.etp * model.moe_router_topk);
  return router_load(model, plan.ep, assignments);
}

std::vector<LayerOp> moe_layer_ops(const ModelSpec& model, const ResolvedPlan& plan, Pass pass) {
  if (pass != Pass::kRecompute) return select(moe_pairs(model, plan), pass);
  switch (plan.plan.recompute_granularity) {
    case RecomputeGranularity::kFull:
      return select(moe_pairs(model, plan), Pass::kForward);
    case RecomputeGranularity::kSelective: {
      const std::uint32_t modules = selective_modules(plan.plan);
      if (modules == 0) return {};
      std::vector<OpPair> pairs = moe_pairs(model, plan);
      tag_recompute_modules(pairs);
      return select(std::move(pairs), Pass::kForward, modules);
    }
    case RecomputeGranularity::kNone:
      break;
  }
  return {};
}

}  // namespace megasim::models
