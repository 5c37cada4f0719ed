#include "models/model_spec.h"

#include <fmt/format.h>

#include <string>

#include "models/moe.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

void require_between(std::int64_t value, const char* field, std::int64_t largest) {
  if (value < 1 || value > largest) {
    throw sim::ConfigError(std::string("model.") + field, std::to_string(value),
                           "an integer from 1 to " + std::to_string(largest));
  }
}

// Weights and biases that one TP rank holds a 1/tp slice of (column- and row-parallel linears).
std::int64_t sharded_layer_parameters(const ModelSpec& model) {
  const std::int64_t h = model.hidden_size;
  const std::int64_t fc1 = h * fc1_width(model) + fc1_width(model);  // column-parallel
  const std::int64_t fc2 = ffn_hidden(model) * h;                    // row-parallel weight
  return attention_parameter_count(model) + fc1 + fc2;
}

// Replicated on every TP rank: two LayerNorms (weight and bias) and the two row-parallel biases,
// and MLA's down-projections.
std::int64_t replicated_layer_parameters(const ModelSpec& model) {
  return 4 * model.hidden_size + 2 * model.hidden_size + attention_replicated_parameter_count(model);
}

std::int64_t position_parameters(const ModelSpec& model) {
  return model.position_embedding_type == PositionEmbedding::kLearnedAbsolute ? model.seq_length * model.hidden_size
                                                                              : 0;
}

}  // namespace

void validate(const ModelSpec& model) {
  require_between(model.num_layers, "num_layers", kMaxLayers);
  require_between(model.hidden_size, "hidden_size", kMaxHidden);
  require_between(model.num_attention_heads, "num_attention_heads", kMaxHeads);
  require_between(model.seq_length, "seq_length", kMaxSeqLength);
  require_between(model.vocab_size, "vocab_size", kMaxVocab);
  require_between(model.make_vocab_size_divisible_by, "make_vocab_size_divisible_by", kMaxVocab);
  if (model.hidden_size % model.num_attention_heads != 0) {
    throw sim::ConfigError("model.num_attention_heads", std::to_string(model.num_attention_heads),
                           "a divisor of hidden_size " + std::to_string(model.hidden_size));
  }
  if (model.num_query_groups < 0 || model.num_query_groups > model.num_attention_heads ||
      (model.num_query_groups > 0 && model.num_attention_heads % model.num_query_groups != 0)) {
    throw sim::ConfigError(
        "model.num_query_groups", std::to_string(model.num_query_groups),
        "0 (multi-head attention) or a divisor of num_attention_heads " + std::to_string(model.num_attention_heads));
  }
  if (model.ffn_hidden_size < 0 || model.ffn_hidden_size > kMaxFfn) {
    throw sim::ConfigError("model.ffn_hidden_size", std::to_string(model.ffn_hidden_size),
                           "0 (Megatron's default) or an integer from 1 to " + std::to_string(kMaxFfn));
  }
  if (!(model.hidden_dropout >= 0 && model.hidden_dropout < 1)) {
    throw sim::ConfigError("model.hidden_dropout", fmt::format("{}", model.hidden_dropout),
                           "a probability from 0 (no dropout) to below 1");
  }
  if (model.multi_latent_attention) {
    if (model.num_query_groups != 0) {
      throw sim::ConfigError("model.num_query_groups", std::to_string(model.num_query_groups),
                             "0 with multi_latent_attention (every head has its own keys and values)");
    }
    if (model.q_lora_rank < 0 || model.q_lora_rank > kMaxHidden) {
      throw sim::ConfigError("model.q_lora_rank", std::to_string(model.q_lora_rank),
                             "0 (no query latent) or a rank from 1 to " + std::to_string(kMaxHidden));
    }
    require_between(model.kv_lora_rank, "kv_lora_rank", kMaxHidden);
    require_between(model.qk_head_dim, "qk_head_dim", kMaxHidden);
    require_between(model.qk_pos_emb_head_dim, "qk_pos_emb_head_dim", kMaxHidden);
    require_between(model.v_head_dim, "v_head_dim", kMaxHidden);
  }
  if (ffn_hidden(model) < 1) {
    throw sim::ConfigError(
        "model.ffn_hidden_size", std::to_string(model.ffn_hidden_size),
        "an explicit size >= 1: the SwiGLU default int(4*hidden*2/3/64)*64 is 0 for this hidden size");
  }
  validate_moe(model);
}

std::int64_t query_groups(const ModelSpec& model) {
  return model.num_query_groups == 0 ? model.num_attention_heads : model.num_query_groups;
}

std::int64_t ffn_hidden(const ModelSpec& model) {
  if (model.ffn_hidden_size != 0) return model.ffn_hidden_size;
  if (model.activation == Activation::kSwiglu) return (4 * model.hidden_size * 2 / 3) / 64 * 64;
  return 4 * model.hidden_size;
}

std::int64_t kv_channels(const ModelSpec& model) {
  return model.hidden_size / model.num_attention_heads;
}

std::int64_t fc1_width(const ModelSpec& model) {
  return model.activation == Activation::kSwiglu ? 2 * ffn_hidden(model) : ffn_hidden(model);
}

std::int64_t padded_vocab_size(const ModelSpec& model, std::int64_t tp) {
  const std::int64_t multiple = model.make_vocab_size_divisible_by * tp;
  return (model.vocab_size + multiple - 1) / multiple * multiple;
}

std::int64_t layer_parameter_count(const ModelSpec& model) {
  return sharded_layer_parameters(model) + replicated_layer_parameters(model);
}

std::int64_t layer_parameter_count_per_tp_rank(const ModelSpec& model, std::int64_t tp) {
  return sharded_layer_parameters(model) / tp + replicated_layer_parameters(model);
}

std::int64_t query_key_head_dim(const ModelSpec& model) {
  return model.multi_latent_attention ? model.qk_head_dim + model.qk_pos_emb_head_dim : kv_channels(model);
}

std::int64_t attention_replicated_parameter_count(const ModelSpec& model) {
  if (!model.multi_latent_attention) return 0;
  const std::int64_t h = model.hidden_size;
  const std::int64_t q_down = model.q_lora_rank > 0 ? h * model.q_lora_rank + model.q_lora_rank : 0;
  return q_down + h * (model.kv_lora_rank + model.qk_pos_emb_head_dim) + model.kv_lora_rank;
}

std::int64_t attention_parameter_count(const ModelSpec& model) {
  const std::int64_t h = model.hidden_size;
  if (model.multi_latent_attention) {
    const std::int64_t a = model.num_attention_heads;
    const std::int64_t q_in = model.q_lora_rank > 0 ? model.q_lora_rank : h;
    return q_in * a * query_key_head_dim(model) + model.kv_lora_rank * a * (model.qk_head_dim + model.v_head_dim) +
           a * model.v_head_dim * h;
  }
  const std::int64_t qkv_width = h + 2 * query_groups(model) * kv_channels(model);
  return h * qkv_width + qkv_width + h * h;  // column-parallel qkv weight and bias, row-parallel proj weight
}

std::int64_t parameter_count(const ModelSpec& model, std::int64_t tp) {
  const std::int64_t word = padded_vocab_size(model, tp) * model.hidden_size;
  const std::int64_t output = model.untie_embeddings_and_output_weights ? word : 0;
  const std::int64_t final_norm = 2 * model.hidden_size;
  const std::int64_t moe = moe_layers_in(model, 0, model.num_layers);
  const std::int64_t layers =
      (model.num_layers - moe) * layer_parameter_count(model) + moe * moe_layer_parameter_count(model);
  return word + position_parameters(model) + layers + final_norm + output;
}

std::int64_t stage_parameter_count(const ModelSpec& model, std::int64_t tp, std::int64_t pp, std::int64_t stage) {
  return stage_parameter_count(model, tp, pp, stage, model.num_layers / pp);
}

std::int64_t stage_parameter_count(const ModelSpec& model, std::int64_t tp, std::int64_t pp, std::int64_t stage,
                                   std::int64_t layers) {
  const std::int64_t word_shard = padded_vocab_size(model, tp) / tp * model.hidden_size;
  std::int64_t count = layers * layer_parameter_count_per_tp_rank(model, tp);
  if (stage == 0) count += word_shard + position_parameters(model);
  if (stage == pp - 1) {
    count += 2 * model.hidden_size;  // final LayerNorm
    if (model.untie_embeddings_and_output_weights || pp > 1) count += word_shard;
  }
  return count;
}

Activation parse_activation(std::string_view text, std::string_view key) {
  if (text == "gelu") return Activation::kGelu;
  if (text == "swiglu") return Activation::kSwiglu;
  throw sim::ConfigError(std::string(key), std::string(text), "gelu or swiglu");
}

std::string_view to_string(Activation activation) {
  return activation == Activation::kSwiglu ? "swiglu" : "gelu";
}

PositionEmbedding parse_position_embedding(std::string_view text, std::string_view key) {
  if (text == "learned_absolute") return PositionEmbedding::kLearnedAbsolute;
  if (text == "rope") return PositionEmbedding::kRope;
  throw sim::ConfigError(std::string(key), std::string(text), "learned_absolute or rope");
}

std::string_view to_string(PositionEmbedding type) {
  return type == PositionEmbedding::kRope ? "rope" : "learned_absolute";
}

}  // namespace megasim::models
