// GPT-style dense decoder, with Megatron-LM's argument names (snake_case). The layer is Megatron's
// default GPT layer: LayerNorm (weight and bias), linear layers with biases, learned absolute or
// rotary position embeddings, dropout on attention probabilities and on both residual branches.
#pragma once

#include <cstdint>
#include <string_view>

namespace megasim::models {

enum class Activation : std::uint8_t { kGelu, kSwiglu };
enum class PositionEmbedding : std::uint8_t { kLearnedAbsolute, kRope };

struct ModelSpec {
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  // 0: one key/value head per query head (multi-head attention); else grouped-query attention.
  std::int64_t num_query_groups = 0;
  // 0: Megatron's default, 4*hidden for GeLU and int(4*hidden*2/3 / 64)*64 for SwiGLU
  // (Megatron-LM arguments.py keeps the SwiGLU parameter count near the GeLU one).
  std::int64_t ffn_hidden_size = 0;
  Activation activation = Activation::kGelu;
  PositionEmbedding position_embedding_type = PositionEmbedding::kLearnedAbsolute;
  std::int64_t seq_length = 0;  // tokens per sample; also the learned position table's size
  std::int64_t vocab_size = 0;  // before padding
  std::int64_t make_vocab_size_divisible_by = 128;
  bool untie_embeddings_and_output_weights = false;
  // Megatron's --hidden-dropout (default 0.1): the dropout after the embedding and on each residual
  // branch. At 0 (Llama-style models train without dropout) PyTorch's dropout returns its input, so
  // no 1-byte mask is written or kept and the fused bias-dropout-add only adds.
  double hidden_dropout = 0.1;
  // Multi-head latent attention (DeepSeek-V2/V3; Megatron core's MLASelfAttention): queries from a
  // low-rank latent of q_lora_rank (0: projected directly from the hidden state), keys and values
  // from one of kv_lora_rank, each head's query and key qk_head_dim wide plus a shared RoPE part of
  // qk_pos_emb_head_dim, its value v_head_dim wide. num_query_groups must stay 0.
  bool multi_latent_attention = false;
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 512;
  std::int64_t qk_head_dim = 128;
  std::int64_t qk_pos_emb_head_dim = 64;
  std::int64_t v_head_dim = 128;
  // Mixture of experts (Megatron-LM core's MoE layer; models/moe.h): 0 experts is a dense model.
  std::int64_t num_experts = 0;
  std::int64_t moe_router_topk = 2;
  std::int64_t moe_ffn_hidden_size = 0;                  // one expert's MLP width; 0: ffn_hidden_size
  std::int64_t moe_shared_expert_intermediate_size = 0;  // the shared experts' width together; 0: none
  std::int64_t moe_layer_freq = 1;                       // layer i is an MoE layer when i % freq == 0
  std::int64_t moe_first_dense_layers = 0;  // the first layers dense whatever freq (DeepSeek's first_k_dense)
  double moe_expert_capacity_factor = 0;    // tokens an expert takes, x its balanced share; 0: dropless
  // How unevenly the router spreads tokens: the coefficient of variation of the experts' expected
  // shares (0: every expert equally popular, as with a well-balanced auxiliary loss).
  double moe_router_load_skew = 0;
  // Group-limited routing (Megatron's --moe-router-num-groups, --moe-router-group-topk; DeepSeek-V3's
  // node-limited routing): the experts in moe_router_num_groups equal groups, each token's experts
  // drawn from at most moe_router_group_topk of them. 0: unlimited.
  std::int64_t moe_router_num_groups = 0;
  std::int64_t moe_router_group_topk = 0;
};

// Upper bounds far beyond any published model (hidden 25,600 and vocabularies of 256 k at most),
// so that parameter, memory and FLOP counts cannot overflow 64 bits (validate checks them; so does
// the key table).
inline constexpr std::int64_t kMaxLayers = 10'000;
inline constexpr std::int64_t kMaxHidden = 1 << 18;
inline constexpr std::int64_t kMaxHeads = 1 << 14;
inline constexpr std::int64_t kMaxSeqLength = 1 << 24;
inline constexpr std::int64_t kMaxVocab = 1 << 26;
inline constexpr std::int64_t kMaxFfn = 1 << 20;

// Throws sim::ConfigError with key "model.<field>" for the first invalid field: sizes must be
// positive, hidden divisible by heads, heads divisible by query groups, groups <= heads.
void validate(const ModelSpec& model);

// Effective sizes (the 0 defaults resolved).
std::int64_t query_groups(const ModelSpec& model);
std::int64_t ffn_hidden(const ModelSpec& model);
std::int64_t kv_channels(const ModelSpec& model);  // hidden / heads
// Output width of the first MLP GEMM: ffn for GeLU, 2*ffn for SwiGLU (gate and up together).
std::int64_t fc1_width(const ModelSpec& model);

// Megatron's _vocab_size_with_padding: rounds vocab_size up to a multiple of
// make_vocab_size_divisible_by * tp so the vocabulary splits evenly over the TP ranks.
std::int64_t padded_vocab_size(const ModelSpec& model, std::int64_t tp);

// Parameters of one transformer layer (all TP ranks together): 12h^2 + 13h for the standard layer.
std::int64_t layer_parameter_count(const ModelSpec& model);
// Parameters of one layer held by one TP rank: the column/row-parallel weights and column biases
// are split over tp; LayerNorm weights/biases and the row-parallel biases are replicated.
std::int64_t layer_parameter_count_per_tp_rank(const ModelSpec& model, std::int64_t tp);

// The attention's TP-sharded weights and biases of one layer (qkv weight and bias, projection
// weight; with MLA the query and key-value up-projections and the projection, no biases), all TP
// ranks together: the part a dense and an MoE layer share.
std::int64_t attention_parameter_count(const ModelSpec& model);
// The attention's weights every TP rank holds whole: with MLA the down-projections to the latents
// and the latents' LayerNorms; 0 otherwise.
std::int64_t attention_replicated_parameter_count(const ModelSpec& model);
// MLA: a head's query/key width (qk_head_dim + qk_pos_emb_head_dim). Else kv_channels.
std::int64_t query_key_head_dim(const ModelSpec& model);

// Whole model, counting the word embeddings once when tied: word embeddings (padded vocab),
// learned position table, layers (MoE layers with all their experts, moe.h), final LayerNorm, and
// an output matrix only when untied.
std::int64_t parameter_count(const ModelSpec& model, std::int64_t tp);

// Parameters held by one GPU of pipeline stage `stage` (0-based) out of pp stages, TP-sharded, the
// stage holding `layers` layers. The first stage holds the embeddings, the last the final LayerNorm
// and the output matrix; when tied and pp > 1 the last stage holds Megatron's copy of the word
// embeddings for the logits (memory, not a new parameter). Dense layers only: a plan's
// stage_parameter_count (plan.h) also counts MoE layers.
std::int64_t stage_parameter_count(const ModelSpec& model, std::int64_t tp, std::int64_t pp, std::int64_t stage,
                                   std::int64_t layers);
// The same with the layers split evenly (num_layers / pp each); a plan's own split is
// stage_parameter_count(model, plan, stage) (plan.h).
std::int64_t stage_parameter_count(const ModelSpec& model, std::int64_t tp, std::int64_t pp, std::int64_t stage);

// Parsing of the text forms used in scenario files ("gelu", "swiglu"; "learned_absolute",
// "rope"); throws sim::ConfigError(key, text, valid forms).
Activation parse_activation(std::string_view text, std::string_view key = "model.activation");
std::string_view to_string(Activation activation);
PositionEmbedding parse_position_embedding(std::string_view text,
                                           std::string_view key = "model.position_embedding_type");
std::string_view to_string(PositionEmbedding type);

}  // namespace megasim::models
