#include "models/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/layer_ops.h"
#include "models/moe.h"
#include "models/pipeline_schedule.h"
#include "models/stage_parameters.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

constexpr std::int64_t kParamBytes = 2;       // bf16
constexpr std::int64_t kOptimizerBytes = 12;  // fp32 master weight, Adam m and v

struct LayerParts {
  std::int64_t replicated = 0;  // R of memory.h, before the SP division
  std::int64_t sharded = 0;     // S, before the TP division
  std::int64_t core = 0;        // C, before the TP division
  std::int64_t per_gpu = 0;     // an MoE layer's expert tensors, already per GPU
  // What selective recompute's modules (plan.h's RecomputeModule) would drop, each counted in the
  // part named: the LayerNorms' outputs (replicated, and MLA's latent norms' per GPU), the attention's
  // Q, K, V (sharded; MLA's up-projection outputs), a dense MLP's tensors (sharded), the experts'
  // activation outputs (per GPU).
  std::int64_t norm_outputs = 0, latent_norm_outputs = 0, qkv = 0, mlp = 0, expert_activation = 0;
};

LayerParts layer_parts(const ModelSpec& model, const ResolvedPlan& plan) {
  const ParallelPlan& p = plan.plan;
  const std::int64_t sbh = plan.local_tokens(model.seq_length) * model.hidden_size;
  const std::int64_t sb = plan.local_tokens(model.seq_length);
  const std::int64_t f = ffn_hidden(model);
  LayerParts parts;
  // Per residual branch (two, one with the parallel block): the LayerNorm input and the input of
  // the first GEMMs (2 sbh each) and the dropout mask (1 byte, none without dropout).
  const std::int64_t branches = p.parallel_transformer_block ? 1 : 2;
  parts.replicated = branches * (model.hidden_dropout > 0 ? 5 : 4) * sbh;
  const std::int64_t mlp = (model.activation == Activation::kSwiglu ? 6 : 4) * sb * f;
  parts.sharded = 2 * sbh + 4 * sb * query_groups(model) * kv_channels(model) + 2 * sbh + mlp;
  parts.norm_outputs = branches * 2 * sbh;
  parts.qkv = 2 * sbh + 4 * sb * query_groups(model) * kv_channels(model);
  parts.mlp = mlp;
  if (model.multi_latent_attention) {
    // Q and K (qk + RoPE per head), V and the attention output (v per head), all heads; per GPU, the
    // latents' LayerNorm inputs and outputs (the up-projections' inputs).
    const std::int64_t heads = model.num_attention_heads;
    parts.sharded = 4 * sb * heads * query_key_head_dim(model) + 4 * sb * heads * model.v_head_dim + mlp;
    parts.per_gpu = 4 * sb * (model.q_lora_rank + model.kv_lora_rank + model.qk_pos_emb_head_dim);
    parts.latent_norm_outputs = 2 * sb * (model.q_lora_rank + model.kv_lora_rank);
    parts.qkv = 4 * sb * heads * query_key_head_dim(model) + 2 * sb * heads * model.v_head_dim;
  }
  if (!uses_flash_kernel(p)) parts.core = 5 * model.num_attention_heads * sb * model.seq_length;
  return parts;
}

// An MoE layer: the dense layer's attention and LayerNorm inputs; instead of the MLP, the shared
// expert's (as a dense MLP of its width, TP-sharded) and, per GPU, the router's fp32
// probabilities over the rank's T tokens, and for each of the busiest rank's routed rows the
// experts' input, fc1 output, activation output (the dense MLP's 4 or 6 bytes per ffn column) and
// the experts' output the unpermutation keeps for the probabilities' gradient.
LayerParts moe_layer_parts(const ModelSpec& model, const ResolvedPlan& plan) {
  const ParallelPlan& p = plan.plan;
  const std::int64_t sb = plan.local_tokens(model.seq_length);
  const std::int64_t h = model.hidden_size;
  const bool glu = model.activation == Activation::kSwiglu;
  LayerParts parts = layer_parts(model, plan);
  parts.sharded -= (glu ? 6 : 4) * sb * ffn_hidden(model);
  const std::int64_t latents = parts.per_gpu;
  parts.mlp = 0;  // no dense MLP: its recompute module drops nothing here
  parts.sharded += (glu ? 6 : 4) * sb * model.moe_shared_expert_intermediate_size;
  const std::int64_t tokens = p.sequence_parallel ? sb / plan.tp : sb;
  const double rows = static_cast<double>(tokens * model.moe_router_topk * plan.etp) * expert_load_factor(model, plan);
  // With FP8 the experts' GEMMs keep their inputs as Transformer Engine's FP8 casts (1 byte): the
  // routed rows and the activation's output; when the activation is recomputed (moe_act), its
  // input, the fc1 output, is kept in FP8 too (DeepSeek-V3 section 3.3.2, low-precision storage).
  const std::int64_t ffn = moe_ffn_hidden(model) / plan.etp;
  const std::int64_t input = uses_fp8(p) ? 1 : 2;
  const bool act_recomputed =
      p.recompute_granularity == RecomputeGranularity::kSelective && (p.recompute_modules & kRecomputeMoeAct) != 0;
  const std::int64_t fc1_out = (glu ? 2 : 1) * ffn * (uses_fp8(p) && act_recomputed ? 1 : 2);
  const double activation_out = static_cast<double>(input * ffn);
  const double per_row = static_cast<double>(input * h + fc1_out + 2 * h) + activation_out;
  // In doubles: a hostile plan's rows pass 2^63 bytes before require_fits refuses them.
  constexpr double kMost = 1e18;
  parts.per_gpu =
      latents + static_cast<std::int64_t>(
                    std::min(kMost, 4.0 * static_cast<double>(tokens * model.num_experts) + std::ceil(rows * per_row)));
  parts.expert_activation = static_cast<std::int64_t>(std::min(kMost, std::ceil(rows * activation_out)));
  return parts;
}

// Tensors of shape s x b x h, divided over TP ranks when sequence parallelism shards them.
std::int64_t region_bytes(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t bytes_per_element) {
  const std::int64_t sbh = plan.local_tokens(model.seq_length) * model.hidden_size;
  return bytes_per_element * (plan.plan.sequence_parallel ? sbh / plan.tp : sbh);
}

// Activations of one layer and micro-batch without recompute (the transient layer of full recompute).
std::int64_t full_layer_bytes(const LayerParts& parts, const ResolvedPlan& plan) {
  const std::int64_t replicated = plan.plan.sequence_parallel ? parts.replicated / plan.tp : parts.replicated;
  return replicated + (parts.sharded + parts.core) / plan.tp + parts.per_gpu;
}

// What a layer keeps for its backward under the plan's recompute setting.
std::int64_t kept_bytes(const ModelSpec& model, const ResolvedPlan& plan, const LayerParts& parts) {
  switch (plan.plan.recompute_granularity) {
    case RecomputeGranularity::kFull:
      return region_bytes(model, plan, 2);
    case RecomputeGranularity::kSelective: {
      const std::uint32_t modules = plan.plan.recompute_modules;
      const auto dropped = [&](RecomputeModule module, std::int64_t bytes) {
        return (modules & module) != 0 ? bytes : 0;
      };
      LayerParts kept = parts;
      kept.core = 0;  // core_attn, or no s x s matrix at all with FlashAttention
      if ((modules & kRecomputeCoreAttn) == 0) kept.core = parts.core;
      kept.replicated -= dropped(kRecomputeLayernorm, parts.norm_outputs);
      kept.per_gpu -=
          dropped(kRecomputeLayernorm, parts.latent_norm_outputs) + dropped(kRecomputeMoeAct, parts.expert_activation);
      kept.sharded -= dropped(kRecomputeMlaUpProj, model.multi_latent_attention ? parts.qkv : 0) +
                      dropped(kRecomputeMlp, parts.mlp);
      return full_layer_bytes(kept, plan);
    }
    case RecomputeGranularity::kNone:
      break;
  }
  return full_layer_bytes(parts, plan);
}

// What one forward of each model chunk of `stage` keeps until its backward: its dense and MoE
// layers' activations, the embedding dropout's mask on the first chunk of the first stage, the
// output layer's input and fp32 logits on the last chunk of the last stage.
std::vector<std::int64_t> chunk_forward_bytes(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  const std::int64_t dense_bytes = layer_activation_bytes(model, plan);
  const std::int64_t moe_bytes = is_moe(model) ? moe_layer_activation_bytes(model, plan) : 0;
  std::vector<std::int64_t> out;
  for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
    const std::int64_t layers = plan.chunk_layers(stage, chunk);
    const std::int64_t moe_layers =
        is_moe(model) ? moe_layers_in(model, plan.chunk_first_layer(stage, chunk), layers) : 0;
    out.push_back((layers - moe_layers) * dense_bytes + moe_layers * moe_bytes);
  }
  if (stage == 0 && model.hidden_dropout > 0) out.front() += region_bytes(model, plan, 1);
  if (stage == plan.pp - 1) {
    const std::int64_t logits = 4 * plan.local_tokens(model.seq_length) * plan.padded_vocab_size / plan.tp;
    out.back() += region_bytes(model, plan, 4) + logits;
  }
  return out;
}

PipelineOrder stage_order(const ResolvedPlan& plan, std::int64_t stage) {
  return PipelineOrder(stage, plan.pp, plan.num_microbatches, plan.virtual_stages, plan.microbatch_group());
}

std::int64_t stage_activation_bytes(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  // The peak over the stage's schedule of the forwards held, each with its chunk's bytes.
  std::int64_t bytes = stage_order(plan, stage).peak_held(chunk_forward_bytes(model, plan, stage));
  if (plan.plan.recompute_granularity == RecomputeGranularity::kFull) {
    const std::int64_t transient = full_layer_bytes(layer_parts(model, plan), plan);
    bytes += is_moe(model) ? std::max(transient, full_layer_bytes(moe_layer_parts(model, plan), plan)) : transient;
  }
  return bytes;
}

// The parameters of the largest unit Megatron-FSDP gathers or reduces at once on this stage: a
// transformer layer, or the embedding / output layer the first and last stages hold.
std::int64_t largest_fsdp_unit(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  const std::int64_t per_layer = layer_parameter_count_per_tp_rank(model, plan.tp);
  const std::int64_t ends = stage_parameter_count(model, plan, stage) - plan.stage_layers(stage) * per_layer;
  return std::max(per_layer, ends);
}

MemoryBreakdown model_state(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  const ParallelPlan& p = plan.plan;
  const ParameterCount count = stage_parameters(model, plan, stage);
  const std::int64_t params = count.total();
  // A contiguous 1/dp of the padded dense buffer, and 1/edp of the experts' (their own group).
  const std::int64_t shard =
      (count.dense + plan.replicas() - 1) / plan.replicas() + (count.expert + plan.edp - 1) / plan.edp;
  // Megatron-FSDP keeps two units unsharded at a time: the one computing and the one prefetched.
  const std::int64_t in_use = std::min(params, 2 * largest_fsdp_unit(model, plan, stage));
  const std::int64_t grad_bytes = gradient_bytes_per_parameter(p);
  MemoryBreakdown out;
  if (!shards_parameters(p)) {
    out.parameters_bytes = kParamBytes * params;
  } else {
    // The shard, plus the gathered parameters: every layer of the stage when they are kept from the
    // forward to the backward (some micro-batch is always between the two at the peak), else the
    // units in use.
    out.parameters_bytes = kParamBytes * (shard + (p.reshard_after_forward ? in_use : params));
  }
  // Sharded gradients: the rank's shard plus the units whose backward has produced gradients not
  // yet reduce-scattered.
  out.gradients_bytes = grad_bytes * (shards_gradients(p) ? shard + in_use : params);
  out.optimizer_bytes = kOptimizerBytes * (p.use_distributed_optimizer ? shard : params);
  return out;
}

}  // namespace

std::int64_t MemoryEstimate::peak_stage() const {
  const auto it = std::max_element(
      stages.begin(), stages.end(),
      [](const MemoryBreakdown& a, const MemoryBreakdown& b) { return a.total_bytes() < b.total_bytes(); });
  return static_cast<std::int64_t>(it - stages.begin());
}

std::int64_t layer_activation_bytes(const ModelSpec& model, const ResolvedPlan& plan) {
  return kept_bytes(model, plan, layer_parts(model, plan));
}

std::int64_t moe_layer_activation_bytes(const ModelSpec& model, const ResolvedPlan& plan) {
  return kept_bytes(model, plan, moe_layer_parts(model, plan));
}

std::int64_t in_flight_chunks(const ResolvedPlan& plan, std::int64_t stage) {
  return max_in_flight_microbatches(stage, plan.pp, plan.num_microbatches, plan.virtual_stages,
                                    plan.microbatch_group());
}

MemoryEstimate estimate_memory(const ModelSpec& model, const ResolvedPlan& plan) {
  MemoryEstimate out;
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    MemoryBreakdown b = model_state(model, plan, stage);
    b.activations_bytes = stage_activation_bytes(model, plan, stage);
    out.stages.push_back(b);
  }
  return out;
}

void require_fits(const MemoryEstimate& estimate, const GpuSpec& gpu) {
  const MemoryBreakdown& peak = estimate.peak();
  const double capacity = gpu.hbm_gbytes * 1e9;
  if (static_cast<double>(peak.total_bytes()) <= capacity) return;
  const auto gb = [](std::int64_t bytes) { return static_cast<double>(bytes) / 1e9; };
  throw sim::ConfigError(
      "plan", fmt::format("{:.1f} GB per GPU on pipeline stage {}", gb(peak.total_bytes()), estimate.peak_stage()),
      fmt::format("a plan whose peak memory per GPU fits in HBM: {} has {:.1f} GB (that stage needs parameters "
                  "{:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f} GB)",
                  gpu.name, gpu.hbm_gbytes, gb(peak.parameters_bytes), gb(peak.gradients_bytes),
                  gb(peak.optimizer_bytes), gb(peak.activations_bytes)));
}

}  // namespace megasim::models
