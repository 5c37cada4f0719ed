// Mixture of experts as Megatron-LM core builds it (megatron/core/transformer/moe/): which layers
// route their tokens to experts, the experts' parameters, and how unevenly a router loads them.
// An MoE layer keeps the dense layer's attention and replaces its MLP by a router (a linear h -> E
// and a top-k), num_experts expert MLPs of moe_ffn_hidden_size (the activation of the model, no
// biases: Megatron's grouped experts have none) and optionally a shared expert of
// moe_shared_expert_intermediate_size that every token passes through.
#pragma once

#include <cstdint>

#include "models/model_spec.h"

namespace megasim::models {

inline constexpr std::int64_t kMaxExperts = 1 << 14;

[[nodiscard]] inline bool is_moe(const ModelSpec& model) {
  return model.num_experts > 0;
}

// Megatron's moe_layer_freq as an integer k: layer i (0-based) is an MoE layer when i % k == 0;
// the first moe_first_dense_layers are dense whatever k (DeepSeek-V3's first_k_dense_replace, which
// Megatron writes as the pattern [0]*3+[1]*58). Always false for a dense model.
[[nodiscard]] bool is_moe_layer(const ModelSpec& model, std::int64_t layer);
// MoE layers among layers first .. first + count - 1.
[[nodiscard]] std::int64_t moe_layers_in(const ModelSpec& model, std::int64_t first, std::int64_t count);

// An expert's MLP width (moe_ffn_hidden_size, or ffn_hidden when 0) and its first GEMM's output
// width (twice that with SwiGLU: gate and up).
[[nodiscard]] std::int64_t moe_ffn_hidden(const ModelSpec& model);
[[nodiscard]] std::int64_t moe_fc1_width(const ModelSpec& model);
[[nodiscard]] std::int64_t shared_expert_fc1_width(const ModelSpec& model);

// Weights of one expert (h x fc1 + ffn x h), of the router (h x E, every TP rank holds it whole)
// and of the shared expert (TP-sharded like a dense MLP; 0 without one).
[[nodiscard]] std::int64_t expert_parameter_count(const ModelSpec& model);
[[nodiscard]] std::int64_t router_parameter_count(const ModelSpec& model);
[[nodiscard]] std::int64_t shared_expert_parameter_count(const ModelSpec& model);

// One MoE layer: all of its parameters (attention, its two LayerNorms and projection bias, router,
// shared expert, every expert), and what one GPU holds of them: the part reduced over the
// data-parallel group (attention and shared expert TP-sharded, LayerNorms, projection bias and
// router whole) and its num_experts / ep experts, each split over etp (reduced over expert DP).
[[nodiscard]] std::int64_t moe_layer_parameter_count(const ModelSpec& model);
// Of the dense part, what every TP rank holds whole: two LayerNorms (weight and bias), the
// projection's bias, the router (and MLA's down-projections).
[[nodiscard]] std::int64_t moe_layer_replicated_parameters(const ModelSpec& model);
[[nodiscard]] std::int64_t moe_layer_dense_parameters_per_tp_rank(const ModelSpec& model, std::int64_t tp);
[[nodiscard]] std::int64_t moe_layer_expert_parameters_per_rank(const ModelSpec& model, std::int64_t ep,
                                                                std::int64_t etp);

// Throws sim::ConfigError naming "model.<field>" for the first bad MoE field (called by validate):
// counts in range, top-k from 1 to num_experts, a capacity factor of 0 (dropless) or above 0 and at
// most num_experts, a skew from 0 to 10, dense first layers from 0 to num_layers.
void validate_moe(const ModelSpec& model);

// How much more than its balanced share the busiest of `ep` expert-parallel ranks receives: the
// expectation over routers of max over ranks of (tokens routed to the rank's num_experts / ep
// experts) / (assignments / ep), for `assignments` token-expert pairs per step. Expert shares are
// log-normal with the coefficient of variation moe_router_load_skew (mean 1), each expert's count
// adds the multinomial noise of `assignments` draws (normal approximation, rescaled to add up to
// them), and a capacity factor c caps each expert at c x its balanced share (dropped tokens are not
// computed). 1 for one rank without drops, about 1 when balanced with many tokens; deterministic:
// a fixed number of draws from a fixed named stream.
[[nodiscard]] double busiest_expert_rank_load(const ModelSpec& model, std::int64_t ep, double assignments);
// The same draws' busiest rank (as above) and the fraction of the assignments the experts keep
// after their capacity (1 when dropless).
struct RouterLoad {
  double busiest = 1;
  double kept = 1;
};
[[nodiscard]] RouterLoad router_load(const ModelSpec& model, std::int64_t ep, double assignments);

}  // namespace megasim::models
