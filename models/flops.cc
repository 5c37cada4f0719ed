#include "models/flops.h"

#include <vector>

#include "models/layer_ops.h"
#include "models/moe.h"

namespace megasim::models {
namespace {

// FLOPs of one micro-batch on one TP rank through a whole pass of ops.
double forward_and_backward(const std::vector<LayerOp>& forward, const std::vector<LayerOp>& backward) {
  return sum_flops(forward) + sum_flops(backward);
}

// The flops.h count of `plan` as given (its sliding window included).
IterationFlops counted_flops(const ModelSpec& model, const ResolvedPlan& plan) {
  const double moe_layers = static_cast<double>(moe_layers_in(model, 0, model.num_layers));
  const double dense_layers = static_cast<double>(model.num_layers) - moe_layers;
  const double dense =
      forward_and_backward(layer_ops(model, plan, Pass::kForward), layer_ops(model, plan, Pass::kBackward));
  const double moe = moe_layers == 0 ? 0.0
                                     : forward_and_backward(moe_layer_ops(model, plan, Pass::kForward),
                                                            moe_layer_ops(model, plan, Pass::kBackward));
  const double ends =
      forward_and_backward(embedding_ops(model, plan, Pass::kForward), embedding_ops(model, plan, Pass::kBackward)) +
      forward_and_backward(output_ops(model, plan, Pass::kForward), output_ops(model, plan, Pass::kBackward));
  const double recompute =
      dense_layers * sum_flops(layer_ops(model, plan, Pass::kRecompute)) +
      (moe_layers == 0 ? 0.0 : moe_layers * sum_flops(moe_layer_ops(model, plan, Pass::kRecompute)));
  // Every micro-batch of every DP replica runs once through every TP rank's shard.
  const double shards = static_cast<double>(plan.num_microbatches * plan.replicas() * plan.tp);
  IterationFlops out;
  out.model = (dense_layers * dense + moe_layers * moe + ends) * shards;
  out.hardware = out.model + recompute * shards;
  out.model_full_attention = out.model;
  return out;
}

}  // namespace

IterationFlops iteration_flops(const ModelSpec& model, const ResolvedPlan& plan) {
  IterationFlops out = counted_flops(model, plan);
  if (plan.plan.sliding_window_size > 0) {
    ResolvedPlan full = plan;
    full.plan.sliding_window_size = 0;
    out.model_full_attention = counted_flops(model, full).model;
  }
  return out;
}

double flops_utilization(double flops, double iteration_time_s, std::int64_t gpus, double peak_tflops) {
  return flops / (iteration_time_s * static_cast<double>(gpus) * peak_tflops * 1e12);
}

}  // namespace megasim::models
