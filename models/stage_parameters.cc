#include "models/stage_parameters.h"

#include "models/moe.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// The embeddings of the first stage, the final LayerNorm and the output (or the tied copy of the
// word embeddings) of the last: stage_parameter_count's ends, model_spec.h.
std::int64_t end_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  return stage_parameter_count(model, plan.tp, plan.pp, stage, 0);
}

}  // namespace

ParameterCount layer_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t layer) {
  if (!is_moe_layer(model, layer)) return {layer_parameter_count_per_tp_rank(model, plan.tp), 0};
  return {moe_layer_dense_parameters_per_tp_rank(model, plan.tp),
          moe_layer_expert_parameters_per_rank(model, plan.ep, plan.etp)};
}

ParameterCount chunk_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage,
                                std::int64_t chunk) {
  MEGASIM_ASSERT(stage >= 0 && stage < plan.pp && chunk >= 0 && chunk < plan.virtual_stages,
                 "stage and chunk must exist in the plan");
  ParameterCount out;
  const std::int64_t layers = plan.chunk_layers(stage, chunk);
  if (!is_moe(model)) {
    out.dense = layers * layer_parameter_count_per_tp_rank(model, plan.tp);
  } else {
    const std::int64_t first = plan.chunk_first_layer(stage, chunk);
    for (std::int64_t layer = first; layer < first + layers; ++layer) {
      const ParameterCount one = layer_parameters(model, plan, layer);
      out.dense += one.dense;
      out.expert += one.expert;
    }
  }
  const bool holds_ends = (stage == 0 && chunk == 0) || (stage == plan.pp - 1 && chunk == plan.virtual_stages - 1);
  if (holds_ends) out.dense += end_parameters(model, plan, stage);
  return out;
}

ParameterCount stage_parameters(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  ParameterCount out;
  for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
    const ParameterCount one = chunk_parameters(model, plan, stage, chunk);
    out.dense += one.dense;
    out.expert += one.expert;
  }
  return out;
}

std::int64_t stage_parameter_count(const ModelSpec& model, const ResolvedPlan& plan, std::int64_t stage) {
  return stage_parameters(model, plan, stage).total();
}

}  // namespace megasim::models
