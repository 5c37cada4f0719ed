// Pipeline-parallel schedules in exactly the order Megatron-LM runs them
// (megatron/core/pipeline_parallel/schedules.py as of the 2023 commit MegaScale compared against,
// 285068c8): forward_backward_pipelining_without_interleaving (1F1B, PipeDream-Flush) and
// forward_backward_pipelining_with_interleaving (interleaved 1F1B, Narayanan et al. SC'21 §2.2);
// and the interleaved schedule of today's Megatron-LM with a tunable number N of contiguous
// micro-batches per model chunk (microbatch_group_size_per_vp_stage: get_schedule_table and
// get_pp_rank_microbatches), the schedule Llama 3 describes (Dubey et al. 2024, §3.3.2, Figure 6).
//
// The microbatch group argument below is that N: 0 is the 2023 schedule (groups of pp, m a multiple
// of pp, and every forward first when m == pp); N >= 1 is today's (groups of N, the last group the
// remaining m mod N micro-batches, warm-up 2·(pp - rank - 1) + (v - 1)·N capped by m·v).
//
// Vocabulary: pp = pipeline_model_parallel_size, m = number of micro-batches per iteration,
// v = model chunks per pipeline rank (virtual_pipeline_model_parallel_size; 1 = plain 1F1B).
// Model chunk c of pipeline rank r is virtual stage c·pp + r of the pp·v stages that make up the
// model: Megatron gives chunk c of rank r the layers [(c·pp + r)·L/(pp·v), (c·pp + r + 1)·L/(pp·v)),
// so a micro-batch visits ranks 0..pp-1 for chunk 0, then 0..pp-1 again for chunk 1, and so on.
#pragma once

#include <cstdint>
#include <vector>

namespace megasim::models {

enum class PassKind : std::uint8_t { kForward, kBackward };

// One compute step of a pipeline rank: the forward or backward of one micro-batch through one of
// the rank's model chunks.
struct ScheduleStep {
  PassKind pass = PassKind::kForward;
  std::int32_t microbatch = 0;  // 0..m-1
  std::int32_t chunk = 0;       // model chunk on this rank, 0..v-1 (virtual pipeline rank)

  friend bool operator==(const ScheduleStep&, const ScheduleStep&) = default;
};

// Checks the schedule's arguments as Megatron does and throws sim::ConfigError naming the plan key:
// "plan.pipeline_model_parallel_size" (pp >= 1), "plan.num_microbatches" (m >= 1; with the
// interleaved 2023 schedule a multiple of pp), "plan.virtual_pipeline_model_parallel_size" (v >= 1,
// and v > 1 only with pp > 1), "plan.microbatch_group_size_per_vp_stage" (0, or with v > 1 from pp
// to m, and m mod N either 0 or at least pp: Megatron's "dependency bubbles" rule).
void validate_pipeline_schedule(std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks,
                                std::int64_t microbatch_group = 0);

// Forward steps a rank runs before its first backward, as Megatron counts them.
// 1F1B: min(pp - rank - 1, m). Interleaved, 2023: every step is warm-up when m == pp; otherwise
// min(2·(pp - rank - 1) + (v - 1)·pp, m·v). Interleaved with a group of N: min(2·(pp - rank - 1) +
// (v - 1)·N, m·v).
std::int64_t num_warmup_steps(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                              std::int64_t virtual_chunks, std::int64_t microbatch_group = 0);

// The compute order of one pipeline rank, step by step without holding it: warm-up forwards,
// steady-state one-forward-one-backward pairs (forward first, as Megatron issues them), cool-down
// backwards; 2·m·v steps, every (micro-batch, chunk) once as a forward and once as a backward.
// Forwards follow Megatron's schedule table: micro-batches [g·N, (g+1)·N) through chunk 0, then
// the same group through chunk 1, ..., chunk v-1, then the next group; backwards follow the same
// table with the chunk order reversed. Constructing it validates as validate_pipeline_schedule;
// pp_rank must lie in [0, pp).
class PipelineOrder {
 public:
  PipelineOrder(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks,
                std::int64_t microbatch_group = 0);
  [[nodiscard]] std::int64_t size() const { return 2 * total_; }
  [[nodiscard]] std::int64_t warmup() const { return warmup_; }
  // Step i of the order, 0 <= i < size().
  [[nodiscard]] ScheduleStep operator[](std::int64_t i) const;
  // The most the rank holds at once when each forward of model chunk c holds chunk_weight[c]
  // (bytes, say) until its backward: the peak over the order of the weights of the forwards whose
  // backward has not yet run. Equal to walking the 2·m·v steps, in O(v) time: the held sum is
  // piecewise linear between the steps where a forward or a backward enters another chunk, and
  // repeats with every full group of N micro-batches, so one group and the last are searched.
  // chunk_weight has v entries, each >= 0; the result saturates at the int64 maximum.
  [[nodiscard]] std::int64_t peak_held(const std::vector<std::int64_t>& chunk_weight) const;

 private:
  // The k-th entry of the schedule table (k < m·v), as a forward or a backward.
  [[nodiscard]] ScheduleStep entry(std::int64_t k, PassKind pass) const;
  // Micro-batches in the group holding table entry k (N, or fewer in the last group).
  [[nodiscard]] std::int64_t group_size_at(std::int64_t k) const;
  std::int64_t m_, v_, group_;  // group_: the effective N (pp for the 2023 schedule)
  std::int64_t total_, warmup_;
};

// The whole order of PipelineOrder as a list.
std::vector<ScheduleStep> pipeline_schedule(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                            std::int64_t virtual_chunks, std::int64_t microbatch_group = 0);

// Layer mapping of model chunks (see the file comment).
constexpr std::int64_t virtual_stage_of(std::int64_t pp_rank, std::int64_t chunk, std::int64_t pp) {
  return chunk * pp + pp_rank;
}
constexpr std::int64_t pp_rank_of_virtual_stage(std::int64_t stage, std::int64_t pp) {
  return stage % pp;
}
constexpr std::int64_t chunk_of_virtual_stage(std::int64_t stage, std::int64_t pp) {
  return stage / pp;
}
// Index of the first transformer layer held by `chunk` of `pp_rank`.
constexpr std::int64_t first_layer_of_chunk(std::int64_t pp_rank, std::int64_t chunk, std::int64_t pp,
                                            std::int64_t layers_per_virtual_stage) {
  return virtual_stage_of(pp_rank, chunk, pp) * layers_per_virtual_stage;
}

// The most (micro-batch, chunk) forwards whose backward has not yet run at any point of the rank's
// schedule: how many chunk-sized sets of activations the rank must hold at once. For 1F1B this is
// min(pp - rank, m) micro-batches; with v > 1 multiply by the activations of one chunk (1/v of the
// rank's layers) to get the memory. Computed from the order itself.
std::int64_t max_in_flight_microbatches(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                        std::int64_t virtual_chunks, std::int64_t microbatch_group = 0);

// Makespan, in the unit of the given times, of one iteration when communication is free and every
// chunk forward takes t_fwd_per_chunk and every chunk backward t_bwd_per_chunk: each rank runs its
// steps in pipeline_schedule order, as soon as the step's inputs exist. The forward of (micro-batch,
// virtual stage k) needs the forward of stage k-1; its backward needs its own forward and the
// backward of stage k+1. A reference for the pipeline bubble, not a model of a real run.
double simulate_schedule_ideal(std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks,
                               double t_fwd_per_chunk, double t_bwd_per_chunk, std::int64_t microbatch_group = 0);

}  // namespace megasim::models
