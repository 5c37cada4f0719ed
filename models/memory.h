// Memory per GPU of a plan: model state and the activations of the micro-batches in flight.
//  - Model state (Megatron-LM mixed precision, Adam): 2 bytes of bf16 parameters, 4 of fp32 main
//    gradients, 12 of fp32 master weights + Adam m and v per parameter; the distributed optimizer
//    shards the 12 over the data-parallel group (6 + 12/d bytes per parameter, 18 without it);
//    grad_reduce_in_bf16 makes the gradients 2 bytes. data_parallel_sharding_strategy optim_grads
//    shards the gradients too (their 1/d plus the two FSDP units, layers or the embedding, whose
//    gradients are not yet reduce-scattered), optim_grads_params the parameters as well (their 1/d
//    plus two gathered units, or plus all of the stage's without reshard_after_forward).
//  - Activations of one layer and micro-batch on one TP rank: Korthikanti et al. 2022 section 4
//    (bf16 tensors, 1-byte dropout masks, none when hidden_dropout is 0), by recompute setting,
//    sequence parallelism and attention kernel; a rank holds its schedule's in-flight micro-batches
//    (Megatron's schedules.py warm-up counts), the first and last stages their embedding and loss
//    tensors.
// The formulas, and how they reduce to Korthikanti's: docs/design/memory.md.
// Left out: CUDA context, NCCL and allocator overheads, temporary buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu_spec.h"
#include "models/model_spec.h"
#include "models/plan.h"

namespace megasim::models {

struct MemoryBreakdown {
  std::int64_t parameters_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t activations_bytes = 0;
  [[nodiscard]] std::int64_t total_bytes() const {
    return parameters_bytes + gradients_bytes + optimizer_bytes + activations_bytes;
  }
};

struct MemoryEstimate {
  std::vector<MemoryBreakdown> stages;            // one GPU of each pipeline stage, index = stage
  [[nodiscard]] std::int64_t peak_stage() const;  // the first stage with the largest total
  [[nodiscard]] const MemoryBreakdown& peak() const { return stages.at(static_cast<std::size_t>(peak_stage())); }
};

// Bytes one TP rank keeps for one layer and one micro-batch, for the plan's recompute setting
// (without the transient layer of full recompute).
std::int64_t layer_activation_bytes(const ModelSpec& model, const ResolvedPlan& plan);
// The same for an MoE layer (moe.h): the attention's as a dense layer's, the shared expert's, the
// router's fp32 probabilities and the busiest expert rank's routed rows (their expert inputs, fc1
// and activation outputs, and expert outputs). The experts' state is sharded over expert DP.
std::int64_t moe_layer_activation_bytes(const ModelSpec& model, const ResolvedPlan& plan);

// The most model-chunk forwards whose activations a rank of `stage` holds at once in its schedule
// (pipeline_schedule.h). The activation memory weighs each held forward by its chunk's bytes and
// takes the peak of that sum (PipelineOrder::peak_held), which with chunks of unequal size (an
// embedding-only or loss-only outermost chunk) need not fall where the count peaks.
std::int64_t in_flight_chunks(const ResolvedPlan& plan, std::int64_t stage);

MemoryEstimate estimate_memory(const ModelSpec& model, const ResolvedPlan& plan);

// Throws sim::ConfigError(key "plan", "<X> GB on pipeline stage k", "a plan whose peak memory per
// GPU fits in HBM: <gpu> has <Y> GB ...") when the peak stage exceeds the GPU's HBM capacity
// (hbm_gbytes * 1e9 bytes; gpu_spec.cc holds the datasheets' GiB in GB). Callers that only want
// to warn compare peak().total_bytes() themselves.
void require_fits(const MemoryEstimate& estimate, const GpuSpec& gpu);

}  // namespace megasim::models
