#include "models/plan.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "models/moe.h"
#include "models/pipeline_schedule.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

using sim::ConfigError;

std::string str(std::int64_t value) {
  return std::to_string(value);
}

void require_at_least_one(std::int64_t value, const char* key) {
  if (value < 1) throw ConfigError(key, str(value), "an integer >= 1");
}

void check_sizes(const ParallelPlan& plan, std::int64_t world_size, std::int64_t gpus_per_server) {
  require_at_least_one(world_size, "cluster.gpus");
  require_at_least_one(gpus_per_server, "cluster.gpus_per_server");
  require_at_least_one(plan.tensor_model_parallel_size, "plan.tensor_model_parallel_size");
  require_at_least_one(plan.pipeline_model_parallel_size, "plan.pipeline_model_parallel_size");
  require_at_least_one(plan.micro_batch_size, "plan.micro_batch_size");
  require_at_least_one(plan.global_batch_size, "plan.global_batch_size");
  if (plan.num_layers_per_virtual_pipeline_stage < 0) {
    throw ConfigError("plan.num_layers_per_virtual_pipeline_stage", str(plan.num_layers_per_virtual_pipeline_stage),
                      "0 (no interleaving) or an integer >= 1");
  }
}

// TP splits heads, query groups and the MLP width, and stays inside one server (NVLink domain).
void check_tensor(const ModelSpec& model, std::int64_t tp, std::int64_t gpus_per_server) {
  const char* key = "plan.tensor_model_parallel_size";
  const auto require_divides = [&](std::int64_t n, const std::string& what) {
    if (n % tp != 0) throw ConfigError(key, str(tp), "a divisor of " + what + " " + str(n));
  };
  require_divides(model.num_attention_heads, "num_attention_heads");
  require_divides(query_groups(model), "the number of query groups");
  require_divides(ffn_hidden(model), "ffn_hidden_size");
  require_divides(gpus_per_server, "the GPUs per server");
}

// The layers of the first and last stages when set apart, and of the others (Megatron-LM's
// get_num_layers_to_build, middle_stage_layers); the errors say which rule a split breaks.
void split_layers(const ModelSpec& model, const ParallelPlan& plan, ResolvedPlan& out) {
  const std::int64_t first = plan.decoder_first_pipeline_num_layers;
  const std::int64_t last = plan.decoder_last_pipeline_num_layers;
  const std::int64_t middle = middle_stage_layers(model.num_layers, out.pp, first, last);
  if (middle == 0 && first == 0 && last == 0) {
    throw ConfigError("plan.pipeline_model_parallel_size", str(out.pp),
                      "a divisor of num_layers " + str(model.num_layers));
  }
  if (middle == 0) {
    for (const auto& [k, n] : {std::pair{"plan.decoder_first_pipeline_num_layers", first},
                               std::pair{"plan.decoder_last_pipeline_num_layers", last}}) {
      if (n < 0 || n > model.num_layers) {
        throw ConfigError(k, str(n),
                          "0 (an even share) or a number of layers from 1 to num_layers " + str(model.num_layers));
      }
    }
    const char* key = first != 0 ? "plan.decoder_first_pipeline_num_layers" : "plan.decoder_last_pipeline_num_layers";
    const std::int64_t value = first != 0 ? first : last;
    if (out.pp < 2) {
      throw ConfigError(key, str(value), "0: an uneven first or last stage needs pipeline_model_parallel_size >= 2");
    }
    const std::int64_t others = out.pp - (first != 0 ? 1 : 0) - (last != 0 ? 1 : 0);
    const std::string what = others == 0 ? "add up to num_layers " + str(model.num_layers)
                                         : "leave a multiple of the other " + str(others) + " stages, at least one " +
                                               "layer each (now " + str(model.num_layers - first - last) +
                                               " of num_layers " + str(model.num_layers) + ")";
    throw ConfigError(key, str(value), "first and last stage layers that " + what);
  }
  out.layers_per_stage = middle;
  out.first_stage_layers = first != 0 ? first : middle;
  out.last_stage_layers = last != 0 ? last : middle;
}

void check_pipeline(const ModelSpec& model, const ParallelPlan& plan, ResolvedPlan& out) {
  split_layers(model, plan, out);
  const std::int64_t per_chunk = plan.num_layers_per_virtual_pipeline_stage;
  if (per_chunk == 0) return;
  const char* key = "plan.num_layers_per_virtual_pipeline_stage";
  if (out.pp < 2) throw ConfigError(key, str(per_chunk), "0: interleaving needs pipeline_model_parallel_size >= 2");
  if (out.layers_per_stage % per_chunk != 0) {
    throw ConfigError(key, str(per_chunk),
                      std::string("0 or a divisor of ") +
                          (out.uneven_stages() ? "a middle stage's layers " : "num_layers / pp = ") +
                          str(out.layers_per_stage));
  }
  out.virtual_stages = out.layers_per_stage / per_chunk;
  for (const std::int64_t layers : {out.first_stage_layers, out.last_stage_layers}) {
    if (outermost_chunk_layers(layers, out.virtual_stages, per_chunk) < 0) {
      throw ConfigError(key, str(per_chunk),
                        "a chunk size whose " + str(out.virtual_stages) +
                            " model chunks per rank also split the first and last stages' layers (" +
                            str(out.first_stage_layers) + ", " + str(out.last_stage_layers) +
                            "): evenly, or chunks of this size and an outermost chunk of the rest (none: the "
                            "embedding or the loss alone)");
    }
  }
  if (out.virtual_stages == 1) {
    out.warnings.push_back("one model chunk per pipeline rank: using the non-interleaved 1F1B schedule");
  }
}

void check_batch(const ModelSpec& model, const ParallelPlan& plan, ResolvedPlan& out) {
  // tokens_per_iteration (global batch x seq_length) is a 64-bit count.
  const std::int64_t most = std::numeric_limits<std::int64_t>::max() / model.seq_length;
  if (plan.global_batch_size > most) {
    throw ConfigError("plan.global_batch_size", str(plan.global_batch_size),
                      "at most " + str(most) + " (its tokens per iteration, x seq_length " + str(model.seq_length) +
                          ", must fit in 64 bits)");
  }
  const std::int64_t per_step = plan.micro_batch_size * out.dp;
  if (plan.global_batch_size % per_step != 0) {
    throw ConfigError("plan.global_batch_size", str(plan.global_batch_size),
                      "a multiple of micro_batch_size x data-parallel size = " + str(per_step));
  }
  out.num_microbatches = plan.global_batch_size / per_step;
  if (!out.interleaved() && plan.microbatch_group_size_per_vp_stage != 0) {
    out.warnings.push_back("microbatch_group_size_per_vp_stage has no effect without interleaving (1F1B)");
  }
  if (out.microbatch_group() != 0) {
    validate_pipeline_schedule(out.pp, out.num_microbatches, out.virtual_stages, out.microbatch_group());
  } else if (out.interleaved() && out.num_microbatches % out.pp != 0) {
    throw ConfigError("plan.global_batch_size", str(plan.global_batch_size),
                      "a batch giving a number of micro-batches (now " + str(out.num_microbatches) +
                          ") divisible by pipeline_model_parallel_size " + str(out.pp) +
                          ", as the interleaved schedule requires");
  }
}

// MegaScale's efficient operators bring FlashAttention-2: they replace a FlashAttention-1 choice.
// flash-attn 1.x's flash_attn_unpadded_func takes a causal flag and no window.
void resolve_attention_kernel(ResolvedPlan& out) {
  ParallelPlan& p = out.plan;
  if (p.use_flash_attention && p.attention_kernel == AttentionKernel::kFlashAttention1) {
    out.warnings.push_back(
        "use_flash_attention (FlashAttention-2 and fused kernels) overrides attention_kernel = flash_attention_1");
  }
  p.attention_kernel = attention_kernel_of(p);
  if (p.attention_kernel == AttentionKernel::kFlashAttention1 && p.sliding_window_size > 0) {
    out.warnings.push_back(
        "flash_attention_1 has no sliding-window argument: timed as a FlashAttention-1 kernel that skips the "
        "blocks outside the window (an assumption)");
  }
}

// Switches that depend on others. Megatron turns sequence parallelism off at tp == 1 with a warning;
// tp_comm_overlap then has nothing to overlap, so it is turned off too rather than rejected.
void resolve_switches(const ModelSpec& model, ResolvedPlan& out) {
  ParallelPlan& p = out.plan;
  if (out.tp == 1 && (p.sequence_parallel || p.tp_comm_overlap)) {
    out.warnings.push_back("tensor_model_parallel_size is 1: sequence_parallel and tp_comm_overlap disabled");
    p.sequence_parallel = false;
    p.tp_comm_overlap = false;
  }
  if (p.sequence_parallel && model.seq_length % out.tp != 0) {
    throw ConfigError("plan.sequence_parallel", "true",
                      "false, or a seq_length (" + str(model.seq_length) + ") divisible by tp " + str(out.tp));
  }
  if (p.tp_comm_overlap && !p.sequence_parallel) {
    throw ConfigError("plan.tp_comm_overlap", "true", "false unless sequence_parallel is true");
  }
  if (p.overlap_param_gather && !p.use_distributed_optimizer) {
    throw ConfigError("plan.overlap_param_gather", "true", "false unless use_distributed_optimizer is true");
  }
  if (p.overlap_param_gather && !p.overlap_grad_reduce) {
    throw ConfigError("plan.overlap_param_gather", "true", "false unless overlap_grad_reduce is true");
  }
  if (p.data_parallel_sharding_strategy != DataParallelSharding::kNoShard && !p.use_distributed_optimizer) {
    throw ConfigError("plan.data_parallel_sharding_strategy", std::string(to_string(p.data_parallel_sharding_strategy)),
                      "no_shard unless use_distributed_optimizer is true (Megatron-FSDP requires it)");
  }
  if (!p.reshard_after_forward && !shards_parameters(p)) {
    throw ConfigError("plan.reshard_after_forward", "false",
                      "true unless data_parallel_sharding_strategy is optim_grads_params (only sharded parameters "
                      "are resharded)");
  }
  if (p.overlap_p2p_comm && !out.interleaved()) {
    out.warnings.push_back("overlap_p2p_comm needs the interleaved schedule: disabled");
    p.overlap_p2p_comm = false;
  }
  if (p.fp8_param_gather && (!uses_fp8(p) || !p.use_distributed_optimizer)) {
    throw ConfigError("plan.fp8_param_gather", "true", "false unless fp8 is on and use_distributed_optimizer is true");
  }
  if (p.parallel_transformer_block && (model.multi_latent_attention || model.num_experts > 0)) {
    throw ConfigError("plan.parallel_transformer_block", "true",
                      "false for a model with multi_latent_attention or experts (the parallel block fuses the "
                      "dense layer's qkv and fc1)");
  }
  if (p.sliding_window_size < 0 || p.sliding_window_size > model.seq_length) {
    throw ConfigError("plan.sliding_window_size", str(p.sliding_window_size),
                      "0 (full causal attention) or a window between 1 and seq_length " + str(model.seq_length));
  }
  resolve_attention_kernel(out);
}

// Context parallelism (Megatron-LM arguments.py, Transformer Engine's context-parallel attention).
void check_context(const ModelSpec& model, const ResolvedPlan& out) {
  if (out.cp == 1) return;
  const char* key = "plan.context_parallel_size";
  if (model.seq_length % (2 * out.cp) != 0) {
    throw ConfigError(key, str(out.cp),
                      "a size whose 2 x cp load-balanced chunks split seq_length " + str(model.seq_length) + " evenly");
  }
  if (out.plan.sequence_parallel && (model.seq_length / out.cp) % out.tp != 0) {
    throw ConfigError(key, str(out.cp),
                      "a size leaving a sequence shard (seq_length / cp) divisible by tp " + str(out.tp) +
                          " for sequence parallelism");
  }
  if (!uses_flash_kernel(out.plan)) {
    throw ConfigError(key, str(out.cp),
                      "1 unless a FlashAttention kernel runs the attention (use_flash_attention or attention_kernel "
                      "flash_attention_2): Megatron's context parallelism is Transformer Engine's fused attention");
  }
  if (out.plan.cp_comm_type == CpCommType::kA2a) {
    const std::int64_t heads = model.num_attention_heads / out.tp;
    const std::int64_t groups = query_groups(model) / out.tp;
    if (heads % out.cp != 0 || groups % out.cp != 0) {
      throw ConfigError(key, str(out.cp),
                        "with cp_comm_type a2a, a divisor of the heads (" + str(heads) + ") and query groups (" +
                            str(groups) + ") of a TP rank: the all-to-all splits them over the CP ranks");
    }
  }
}

// Expert parallelism (Megatron-LM arguments.py and parallel_state.py's expert groups).
void check_experts(const ModelSpec& model, std::int64_t gpus_per_server, ResolvedPlan& out) {
  const ParallelPlan& p = out.plan;
  const char* ep_key = "plan.expert_model_parallel_size";
  const char* etp_key = "plan.expert_tensor_parallel_size";
  require_at_least_one(p.expert_model_parallel_size, ep_key);
  if (p.expert_tensor_parallel_size < 0) {
    throw ConfigError(etp_key, str(p.expert_tensor_parallel_size), "0 (the tensor-parallel size) or an integer >= 1");
  }
  out.ep = p.expert_model_parallel_size;
  out.etp = p.expert_tensor_parallel_size == 0 ? out.tp : p.expert_tensor_parallel_size;
  if (!is_moe(model)) {
    if (out.ep != 1) throw ConfigError(ep_key, str(out.ep), "1 for a dense model (model.num_experts is 0)");
    if (p.overlap_moe_expert_parallel_comm) {
      throw ConfigError("plan.overlap_moe_expert_parallel_comm", "true", "false for a dense model (num_experts 0)");
    }
    if (out.etp != out.tp) {
      throw ConfigError(etp_key, str(out.etp), "0 or the tensor-parallel size for a dense model (num_experts 0)");
    }
    return;
  }
  if (model.num_experts % out.ep != 0) {
    throw ConfigError(ep_key, str(out.ep), "a divisor of num_experts " + str(model.num_experts));
  }
  if (moe_ffn_hidden(model) % out.etp != 0 || gpus_per_server % out.etp != 0) {
    throw ConfigError(etp_key, str(out.etp),
                      "a divisor of the experts' ffn width " + str(moe_ffn_hidden(model)) +
                          " and of the GPUs per server " + str(gpus_per_server) + " (expert TP inside a server)");
  }
  const std::int64_t stage_ranks = out.tp * out.replicas();
  if (stage_ranks % (out.ep * out.etp) != 0) {
    throw ConfigError(ep_key, str(out.ep),
                      "a size whose product with expert_tensor_parallel_size " + str(out.etp) +
                          " divides tensor x context x data parallel = " + str(stage_ranks) +
                          " (the ranks of a stage)");
  }
  out.edp = stage_ranks / (out.ep * out.etp);
  if (model.moe_shared_expert_intermediate_size % out.tp != 0) {
    throw ConfigError(
        "plan.tensor_model_parallel_size", str(out.tp),
        "a divisor of moe_shared_expert_intermediate_size " + str(model.moe_shared_expert_intermediate_size));
  }
  if (out.tp > 1 && !p.sequence_parallel) {
    throw ConfigError("plan.sequence_parallel", "false",
                      "true: Megatron-LM requires sequence parallelism for MoE with tensor parallelism");
  }
  if (p.overlap_moe_expert_parallel_comm && p.moe_token_dispatcher_type == MoeTokenDispatcher::kAllgather) {
    throw ConfigError("plan.overlap_moe_expert_parallel_comm", "true",
                      "false unless moe_token_dispatcher_type is alltoall or flex (Megatron overlaps their "
                      "all-to-alls)");
  }
  if (p.moe_token_dispatcher_type == MoeTokenDispatcher::kFlex && out.etp != 1) {
    throw ConfigError("plan.expert_tensor_parallel_size", str(out.etp),
                      "1 with moe_token_dispatcher_type flex (DeepEP moves whole tokens)");
  }
  if (shards_gradients(p)) {
    throw ConfigError("plan.data_parallel_sharding_strategy", std::string(to_string(p.data_parallel_sharding_strategy)),
                      "no_shard or optim for an MoE model (sharded gradients and parameters of experts are not "
                      "modelled)");
  }
}

}  // namespace

std::int64_t middle_stage_layers(std::int64_t num_layers, std::int64_t pp, std::int64_t first, std::int64_t last) {
  if (pp < 1 || first < 0 || last < 0 || first > num_layers || last > num_layers) return 0;
  if (first == 0 && last == 0) return num_layers % pp == 0 ? num_layers / pp : 0;
  if (pp < 2) return 0;
  const std::int64_t others = pp - (first != 0 ? 1 : 0) - (last != 0 ? 1 : 0);
  const std::int64_t left = num_layers - first - last;
  if (others == 0) return left == 0 ? first : 0;
  return left >= others && left % others == 0 ? left / others : 0;
}

std::int64_t outermost_chunk_layers(std::int64_t stage_layers, std::int64_t v, std::int64_t per_chunk) {
  if (v < 1 || stage_layers < 1) return -1;
  if (stage_layers % v == 0) return stage_layers / v;
  const std::int64_t rest = stage_layers - (v - 1) * per_chunk;
  return rest >= 0 ? rest : -1;
}

AttentionKernel attention_kernel_of(const ParallelPlan& plan) {
  return plan.use_flash_attention ? AttentionKernel::kFlashAttention2 : plan.attention_kernel;
}

ResolvedPlan resolve_plan(const ModelSpec& model, const ParallelPlan& plan, std::int64_t world_size,
                          std::int64_t gpus_per_server) {
  validate(model);
  check_sizes(plan, world_size, gpus_per_server);
  ResolvedPlan out;
  out.plan = plan;
  out.world_size = world_size;
  out.gpus_per_server = gpus_per_server;
  out.tp = plan.tensor_model_parallel_size;
  out.pp = plan.pipeline_model_parallel_size;
  check_tensor(model, out.tp, gpus_per_server);
  require_at_least_one(plan.context_parallel_size, "plan.context_parallel_size");
  out.cp = plan.context_parallel_size;
  if (out.cp > 1 && world_size % (out.tp * out.cp * out.pp) != 0) {
    throw ConfigError("plan.context_parallel_size", str(out.cp),
                      "a size such that tensor x context x pipeline (" + str(out.tp * out.cp * out.pp) +
                          ") divides the GPU count " + str(world_size));
  }
  out.dp = make_layout(world_size, out.tp * out.cp, out.pp).data;
  check_pipeline(model, plan, out);
  check_batch(model, plan, out);
  resolve_switches(model, out);
  check_context(model, out);
  check_experts(model, gpus_per_server, out);
  out.padded_vocab_size = padded_vocab_size(model, out.tp);
  return out;
}

}  // namespace megasim::models
