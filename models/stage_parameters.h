// What one GPU holds of the model's parameters, per pipeline stage and model chunk, split by the
// group that reduces their gradients: the dense part over the data-parallel group, the MoE layers'
// experts over the expert-data-parallel group (Megatron core DDP keeps them in separate buffers,
// distributed_data_parallel.py's expert_parallel_buffers).
#pragma once

#include <cstdint>

#include "models/model_spec.h"
#include "models/plan.h"

namespace megasim::models {

struct ParameterCount {
  std::int64_t dense = 0;   // TP-sharded or replicated: embeddings, attention, norms, dense MLPs, routers
  std::int64_t expert = 0;  // the rank's experts of the MoE layers, each split over expert TP
  [[nodiscard]] std::int64_t total() const { return dense + expert; }
};

// Chunk `chunk` of pipeline rank `stage`: its layers (those from plan.chunk_first_layer), plus the
// embeddings in chunk 0 of the first stage and the final LayerNorm and output weights in the last
// chunk of the last stage. Sums over chunks to stage_parameters.
[[nodiscard]] ParameterCount chunk_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                              std::int64_t chunk);
[[nodiscard]] ParameterCount stage_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage);

// One layer's parameters on one GPU: dense layers' layer_parameter_count_per_tp_rank, MoE
// layers' moe.h counts.
[[nodiscard]] ParameterCount layer_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t layer);

}  // namespace megasim::models
