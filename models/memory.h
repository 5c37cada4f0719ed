// Memory per GPU of a plan: model state and the activations of the micro-batches in flight.
//
// Model state (Megatron-LM mixed precision, Adam): bf16 parameters (2 bytes), fp32 main gradients
// (4 bytes), and fp32 master weights + Adam m + v (12 bytes) per parameter; the distributed
// optimizer shards those 12 bytes over the data-parallel group: 6 + 12/d bytes per parameter
// (calibration README), 18 without it.
//
// Activations of one layer for one micro-batch on one TP rank (Korthikanti et al. 2022, section 4,
// bf16 tensors and 1-byte dropout masks), written as three parts:
//   replicated R = 10*s*b*h     (two LayerNorm inputs, QKV and fc1 inputs, two dropout masks),
//                                divided by t with sequence parallelism;
//   sharded    S = Q 2sbh + K,V 4*s*b*g*d + projection input 2sbh + MLP (GeLU 4*s*b*f: its input
//                  and output; SwiGLU 6*s*b*f: 2f in, f out), divided by t;
//   core       C = 5*b*a*s^2    (softmax output 2, dropout mask 1, dropout output 2 bytes per score;
//                                the unfused kernel keeps the whole masked matrix even with a
//                                sliding window), divided by t; zero with FlashAttention (-1 or
//                                -2), which keeps no score matrix (its per-row fp32 log-sum-exp,
//                                4*b*a*s/t bytes, is left out: < 0.1%).
// For the standard layer (g = a, f = 4h) this gives Korthikanti's
//   no recompute, TP without SP: s*b*h*(10 + 24/t + 5*a*s/(h*t));   with SP: s*b*h/t*(34 + 5*a*s/h);
//   selective recompute drops C (34*s*b*h/t with SP); full recompute keeps only the layer input,
//   2*s*b*h (/t with SP), plus one layer's full activations while that layer's backward runs.
// The parallel transformer block has one LayerNorm whose output feeds both branches and one fused
// output GEMM with one dropout mask: R = 5*s*b*h (LayerNorm input and output, one mask).
//
// In flight: Megatron's schedules (schedules.py) run W warm-up forwards then alternate one forward,
// one backward, so a rank holds W + 1 model chunks' activations at its peak. 1F1B: W = pp - stage - 1
// (capped by m), so stage k holds min(pp - k, m) micro-batches of its layers. Interleaved with v
// chunks: W = 2*(pp - stage - 1) + (v - 1)*pp (all m*v when m == pp), each chunk holding
// num_layers/(pp*v) layers; on the first stage that is pp*(1 + (pp-1)/(pp*v)) micro-batches' worth
// of its layers, as in Korthikanti et al. section 4.2.3.
// The first stage adds the embedding dropout mask (s*b*h, /t with SP) per in-flight chunk-0
// micro-batch; the last stage adds, per in-flight last-chunk micro-batch, the final LayerNorm
// input and logits-GEMM input (2*s*b*h each, /t with SP) and the fp32 softmax of the
// vocab-parallel cross-entropy (4*s*b*V/t).
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

// Model chunks whose forward activations a rank of `stage` holds at its peak; and how many of them
// are forwards of model chunk `chunk` (0 .. v-1), in Megatron's interleaved order.
std::int64_t in_flight_chunks(const ResolvedPlan& plan, std::int64_t stage);
std::int64_t in_flight_chunks_of(const ResolvedPlan& plan, std::int64_t stage, std::int64_t chunk);

MemoryEstimate estimate_memory(const ModelSpec& model, const ResolvedPlan& plan);

// Throws sim::ConfigError(key "plan", "<X> GB on pipeline stage k", "a plan whose peak memory per
// GPU fits in HBM: <gpu> has <Y> GB ...") when the peak stage exceeds the GPU's HBM capacity
// (hbm_gbytes * 1e9 bytes). Callers that only want to warn compare peak().total_bytes() themselves.
void require_fits(const MemoryEstimate& estimate, const GpuSpec& gpu);

}  // namespace megasim::models
