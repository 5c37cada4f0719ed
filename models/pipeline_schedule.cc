#include "models/pipeline_schedule.h"

#include <algorithm>
#include <string>

#include "sim/error.h"

namespace megasim::models {
namespace {

// Megatron walks the rank's m·v forwards (and, separately, its m·v backwards) with one "virtual
// micro-batch" counter k. Micro-batches go through the chunks in groups of pp: forwards run
// micro-batches [g·pp, (g+1)·pp) through chunk 0, then the same group through chunk 1, ..., chunk v-1,
// then the next group. Backwards follow the same table with the chunk order reversed
// (get_model_chunk_id(k, forward=False) = v - 1 - chunk). With v == 1 this reduces to micro-batch k.
ScheduleStep step_of(std::int64_t k, PassKind pass, std::int64_t pp, std::int64_t v) {
  const std::int64_t group = pp * v;
  const std::int64_t in_group = k % group;
  std::int64_t chunk = in_group / pp;
  if (pass == PassKind::kBackward) chunk = v - 1 - chunk;
  const std::int64_t microbatch = (k / group) * pp + k % pp;
  return ScheduleStep{pass, static_cast<std::int32_t>(microbatch), static_cast<std::int32_t>(chunk)};
}

void check_rank(std::int64_t pp_rank, std::int64_t pp) {
  MEGASIM_ASSERT(pp_rank >= 0 && pp_rank < pp, "pipeline rank out of [0, pipeline_model_parallel_size)");
}

}  // namespace

void validate_pipeline_schedule(std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks) {
  if (pp < 1) throw sim::ConfigError("plan.pipeline_model_parallel_size", std::to_string(pp), "an integer >= 1");
  if (virtual_chunks < 1) {
    throw sim::ConfigError("plan.virtual_pipeline_model_parallel_size", std::to_string(virtual_chunks),
                           "an integer >= 1");
  }
  if (virtual_chunks > 1 && pp < 2) {
    throw sim::ConfigError("plan.virtual_pipeline_model_parallel_size", std::to_string(virtual_chunks),
                           "1 when pipeline_model_parallel_size is 1 (interleaving needs a pipeline)");
  }
  if (num_microbatches < 1) {
    throw sim::ConfigError("plan.num_microbatches", std::to_string(num_microbatches), "an integer >= 1");
  }
  // schedules.py raises "number of microbatches is not divisible by pipeline-model-parallel-size
  // when using interleaved schedule".
  if (virtual_chunks > 1 && num_microbatches % pp != 0) {
    throw sim::ConfigError(
        "plan.num_microbatches", std::to_string(num_microbatches),
        "a multiple of pipeline_model_parallel_size (" + std::to_string(pp) + ") with the interleaved schedule");
  }
}

std::int64_t num_warmup_steps(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                              std::int64_t virtual_chunks) {
  validate_pipeline_schedule(pp, num_microbatches, virtual_chunks);
  check_rank(pp_rank, pp);
  if (virtual_chunks == 1) return std::min(pp - pp_rank - 1, num_microbatches);
  const std::int64_t total = num_microbatches * virtual_chunks;
  // Megatron runs all forwards and then all backwards when m equals pp.
  if (num_microbatches == pp) return total;
  return std::min((pp - pp_rank - 1) * 2 + (virtual_chunks - 1) * pp, total);
}

std::vector<ScheduleStep> pipeline_schedule(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                            std::int64_t virtual_chunks) {
  const std::int64_t warmup = num_warmup_steps(pp_rank, pp, num_microbatches, virtual_chunks);
  const std::int64_t total = num_microbatches * virtual_chunks;
  const std::int64_t remaining = total - warmup;
  std::vector<ScheduleStep> steps;
  steps.reserve(static_cast<std::size_t>(2 * total));
  for (std::int64_t k = 0; k < warmup; ++k) steps.push_back(step_of(k, PassKind::kForward, pp, virtual_chunks));
  for (std::int64_t k = 0; k < remaining; ++k) {
    steps.push_back(step_of(warmup + k, PassKind::kForward, pp, virtual_chunks));
    steps.push_back(step_of(k, PassKind::kBackward, pp, virtual_chunks));
  }
  for (std::int64_t k = remaining; k < total; ++k) {
    steps.push_back(step_of(k, PassKind::kBackward, pp, virtual_chunks));
  }
  return steps;
}

std::int64_t max_in_flight_microbatches(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                        std::int64_t virtual_chunks) {
  std::int64_t in_flight = 0;
  std::int64_t peak = 0;
  for (const ScheduleStep& step : pipeline_schedule(pp_rank, pp, num_microbatches, virtual_chunks)) {
    in_flight += step.pass == PassKind::kForward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

}  // namespace megasim::models
