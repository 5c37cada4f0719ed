// Models and plans shared by the model/plan/FLOP/memory tests: the GPT configurations of
// ../shared/calibration/megatron_published.csv and megascale_setup.md (inputs, not results).
#pragma once

#include <cstdint>
#include <string>

#include "models/model_spec.h"
#include "models/plan.h"
#include "sim/error.h"

namespace megasim::models::testing {

// GPT-3-style model with Megatron defaults (MHA, GeLU, ffn 4h, learned positions, tied).
inline ModelSpec gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t vocab = 51200,
                     std::int64_t seq = 2048) {
  ModelSpec m;
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = heads;
  m.seq_length = seq;
  m.vocab_size = vocab;
  return m;
}

inline ModelSpec gpt_22b() {
  return gpt(48, 6144, 64);
}
inline ModelSpec gpt_175b() {
  return gpt(96, 12288, 96);
}

// A Llama-style model of `layers` layers and `seq` tokens: hidden 4,096, 32 heads in 8 query groups,
// SwiGLU of 14,336, RoPE, no dropout, vocabulary 32,000 (Mixtral's dense dimensions).
inline ModelSpec llama_style(std::int64_t layers, std::int64_t seq) {
  ModelSpec m = gpt(layers, 4096, 32, 32000, seq);
  m.num_query_groups = 8;
  m.ffn_hidden_size = 14336;
  m.activation = Activation::kSwiglu;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.hidden_dropout = 0;
  return m;
}

// A plan from the CSV's columns: vpp_chunks 0 = no interleaving.
inline ParallelPlan plan_of(const ModelSpec& m, std::int64_t tp, std::int64_t pp, std::int64_t vpp_chunks,
                            std::int64_t micro, std::int64_t global) {
  ParallelPlan p;
  p.tensor_model_parallel_size = tp;
  p.pipeline_model_parallel_size = pp;
  p.num_layers_per_virtual_pipeline_stage = vpp_chunks > 0 ? m.num_layers / (pp * vpp_chunks) : 0;
  p.micro_batch_size = micro;
  p.global_batch_size = global;
  return p;
}

// The key of the ConfigError resolve_plan throws, or "" when it accepts the plan.
inline std::string plan_error_key(const ModelSpec& m, const ParallelPlan& p, std::int64_t world,
                                  std::int64_t per_server = 8) {
  try {
    resolve_plan(m, p, world, per_server);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "";
}

}  // namespace megasim::models::testing
