// FLOP accounting of one training iteration and the utilisation metrics built on it.
//
// Convention (named in every report as kFlopConvention): Korthikanti et al. 2022, Appendix A.
// Matrix-multiply FLOPs only, 2 per multiply-add; attention counts all s keys per query (the full
// score matrix, not the causal half; with a sliding window the band's share, see layer_ops.h);
// backward = 2x forward; the padded vocabulary (as Megatron's own counter). For the standard GPT
// layer (MHA, GeLU, ffn = 4h) the sum of the per-op FLOPs equals
//   72 * B * s * l * h^2 * (1 + s/(6h) + V/(12*l*h)),   B = global batch in samples.
// Model FLOPs exclude recompute (MFU). Hardware FLOPs add the forward ops that recompute runs again
// (HFU), counted the same way: full recompute gives Narayanan et al. 2021's
//   96 * B * s * l * h^2 * (1 + s/(6h) + V/(16*l*h));
// selective recompute adds one forward of the attention core, 4*b*s^2*h per layer and micro-batch,
// which turns the bracket's s/(6h) into s/(6h) + s/(18h) = 2s/(9h). Korthikanti et al. print s/(3h)
// for selective recompute (the recompute counted as 12*b*s^2*h, three times the forward) and their
// published HFU/MFU ratios follow it; this accounting counts what runs, so its selective HFU is
// lower (by 3.4% for their 22B model: 1 + s/(3h) + V/(12lh) = 1.1256 against
// 1 + 2s/(9h) + V/(12lh) = 1.0885).
//
// MegaScale (Jiang et al., NSDI'24) reports MFU with the formula above, full s x s attention, even
// for its runs with sliding-window attention (kFullAttentionFlopConvention): the same count with the
// window ignored. Without a window the two are the same number.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/model_spec.h"
#include "models/plan.h"

namespace megasim::models {

inline constexpr std::string_view kFlopConvention =
    "korthikanti2022: matmul FLOPs (2 per multiply-add), full s x s attention (sliding window: "
    "s*(1-(1-w/s)^2) keys per query), backward 2x forward, padded vocabulary; MFU counts no recompute, "
    "HFU adds the recomputed forward ops";

inline constexpr std::string_view kFullAttentionFlopConvention =
    "megascale2024: as korthikanti2022 but full s x s attention even with a sliding window "
    "(Jiang et al., NSDI'24, MFU)";

struct IterationFlops {
  double model = 0;     // whole job, one iteration, no recompute
  double hardware = 0;  // model + recomputed forward ops
  // model with plan.sliding_window_size ignored (kFullAttentionFlopConvention); = model without one
  double model_full_attention = 0;
};

// Sums the per-op FLOPs of layer_ops/embedding_ops/output_ops over every layer, micro-batch, data
// parallel replica and TP rank.
IterationFlops iteration_flops(const ModelSpec& model, const ResolvedPlan& plan);

// flops / (iteration_time_s * gpus * peak), peak in TFLOPS (1e12 FLOP/s): MFU for model FLOPs,
// HFU for hardware FLOPs.
double flops_utilization(double flops, double iteration_time_s, std::int64_t gpus, double peak_tflops);

}  // namespace megasim::models
