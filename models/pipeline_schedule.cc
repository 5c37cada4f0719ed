#include "models/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

#include "sim/error.h"

namespace megasim::models {
namespace {

// Sums of byte weights over up to m·v forwards: wider than the result, which saturates.
__extension__ using Wide = __int128;

void check_rank(std::int64_t pp_rank, std::int64_t pp) {
  MEGASIM_ASSERT(pp_rank >= 0 && pp_rank < pp, "pipeline rank out of [0, pipeline_model_parallel_size)");
}

}  // namespace

void validate_pipeline_schedule(std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks,
                                std::int64_t microbatch_group) {
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
  if (microbatch_group < 0) {
    throw sim::ConfigError("plan.microbatch_group_size_per_vp_stage", std::to_string(microbatch_group),
                           "0 (Megatron-LM's 2023 interleaved schedule) or a number of micro-batches");
  }
  if (virtual_chunks == 1) return;  // 1F1B has no groups: Megatron ignores the setting
  if (microbatch_group == 0) {
    // schedules.py raises "number of microbatches is not divisible by pipeline-model-parallel-size
    // when using interleaved schedule".
    if (num_microbatches % pp != 0) {
      throw sim::ConfigError(
          "plan.num_microbatches", std::to_string(num_microbatches),
          "a multiple of pipeline_model_parallel_size (" + std::to_string(pp) + ") with the interleaved schedule");
    }
    return;
  }
  // forward_backward_pipelining_with_interleaving: N in [PP, M]; the last group (M mod N) either
  // empty or at least PP, "otherwise, it introduces dependency bubbles".
  if (microbatch_group < pp || microbatch_group > num_microbatches) {
    throw sim::ConfigError("plan.microbatch_group_size_per_vp_stage", std::to_string(microbatch_group),
                           "a number of contiguous micro-batches from pipeline_model_parallel_size " +
                               std::to_string(pp) + " to the micro-batches per iteration " +
                               std::to_string(num_microbatches));
  }
  const std::int64_t last_group = num_microbatches % microbatch_group;
  if (last_group != 0 && last_group < pp) {
    throw sim::ConfigError("plan.microbatch_group_size_per_vp_stage", std::to_string(microbatch_group),
                           "a group size leaving a last group (micro-batches " + std::to_string(num_microbatches) +
                               " mod the group) of 0 or at least pipeline_model_parallel_size " + std::to_string(pp) +
                               ", now " + std::to_string(last_group));
  }
}

std::int64_t num_warmup_steps(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                              std::int64_t virtual_chunks, std::int64_t microbatch_group) {
  validate_pipeline_schedule(pp, num_microbatches, virtual_chunks, microbatch_group);
  check_rank(pp_rank, pp);
  if (virtual_chunks == 1) return std::min(pp - pp_rank - 1, num_microbatches);
  const std::int64_t total = num_microbatches * virtual_chunks;
  // The 2023 schedule runs all forwards and then all backwards when m equals pp.
  if (microbatch_group == 0 && num_microbatches == pp) return total;
  const std::int64_t group = microbatch_group == 0 ? pp : microbatch_group;
  return std::min((pp - pp_rank - 1) * 2 + (virtual_chunks - 1) * group, total);
}

PipelineOrder::PipelineOrder(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                             std::int64_t virtual_chunks, std::int64_t microbatch_group)
    : m_(num_microbatches),
      v_(virtual_chunks),
      group_(virtual_chunks == 1 ? 1 : (microbatch_group == 0 ? pp : microbatch_group)),
      total_(num_microbatches * virtual_chunks),
      warmup_(num_warmup_steps(pp_rank, pp, num_microbatches, virtual_chunks, microbatch_group)) {}

// get_schedule_table: groups of N micro-batches (the last one the rest), each group through chunk
// 0, then chunk 1, ...; a backward takes the reversed chunk (get_model_chunk_id(k, forward=False)
// = v - 1 - chunk). With v == 1 this is micro-batch k.
ScheduleStep PipelineOrder::entry(std::int64_t k, PassKind pass) const {
  const std::int64_t full_span = group_ * v_;
  const std::int64_t g = k / full_span;
  const std::int64_t start = g * group_;
  const std::int64_t size = std::min(group_, m_ - start);
  const std::int64_t in_group = k - g * full_span;
  std::int64_t chunk = in_group / size;
  if (pass == PassKind::kBackward) chunk = v_ - 1 - chunk;
  return ScheduleStep{pass, static_cast<std::int32_t>(start + in_group % size), static_cast<std::int32_t>(chunk)};
}

ScheduleStep PipelineOrder::operator[](std::int64_t i) const {
  MEGASIM_ASSERT(i >= 0 && i < size(), "schedule step out of [0, 2 m v)");
  if (i < warmup_) return entry(i, PassKind::kForward);
  const std::int64_t remaining = total_ - warmup_;
  const std::int64_t j = i - warmup_;
  if (j < 2 * remaining)
    return j % 2 == 0 ? entry(warmup_ + j / 2, PassKind::kForward) : entry(j / 2, PassKind::kBackward);
  return entry(j - remaining, PassKind::kBackward);
}

std::int64_t PipelineOrder::group_size_at(std::int64_t k) const {
  return std::min(group_, m_ - k / (group_ * v_) * group_);
}

std::int64_t PipelineOrder::peak_held(const std::vector<std::int64_t>& chunk_weight) const {
  MEGASIM_ASSERT(static_cast<std::int64_t>(chunk_weight.size()) == v_, "one weight per model chunk");
  // Prefix sums over the chunks of what a forward of the chunk holds and what the backward of a
  // table entry of chunk c frees (the reversed chunk v - 1 - c).
  std::vector<Wide> fwd(static_cast<std::size_t>(v_ + 1), 0), bwd(static_cast<std::size_t>(v_ + 1), 0);
  for (std::int64_t c = 0; c < v_; ++c) {
    const auto i = static_cast<std::size_t>(c);
    MEGASIM_ASSERT(chunk_weight[i] >= 0, "chunk weights are >= 0");
    fwd[i + 1] = fwd[i] + chunk_weight[i];
    bwd[i + 1] = bwd[i] + chunk_weight[static_cast<std::size_t>(v_ - 1 - c)];
  }
  const std::int64_t span = group_ * v_;  // table entries of a full group
  // The weights of table entries [0, k), k <= m·v: the full groups before k, the whole chunks of
  // k's group before it, and the entries of its chunk.
  const auto prefix = [&](const std::vector<Wide>& sums, std::int64_t k) -> Wide {
    const std::int64_t g = k / span;
    const Wide whole = Wide{g} * group_ * sums.back();
    if (g * group_ >= m_) return whole;
    const std::int64_t in = k - g * span, size = std::min(group_, m_ - g * group_);
    const auto q = static_cast<std::size_t>(in / size);
    const std::int64_t partial = in % size;
    return whole + Wide{size} * sums[q] + (partial == 0 ? Wide{0} : Wide{partial} * (sums[q + 1] - sums[q]));
  };
  const auto saturate = [](Wide x) {
    return x > Wide{std::numeric_limits<std::int64_t>::max()} ? std::numeric_limits<std::int64_t>::max()
                                                              : static_cast<std::int64_t>(x);
  };
  const std::int64_t remaining = total_ - warmup_;
  if (remaining == 0) return saturate(prefix(fwd, total_));  // every forward before any backward
  // Held after the steady-state forward j (warm-up + j + 1 forwards, j backwards done): the peak of
  // the order, since warm-up only adds, a backward only frees and the cool-down only frees.
  const auto held = [&](std::int64_t j) { return prefix(fwd, warmup_ + j + 1) - prefix(bwd, j); };
  Wide best = 0;
  // Within [a, b) the held sum changes by a constant per step between the steps where forward
  // warm-up + j + 1 or backward j enters a new chunk, so its maximum is at one of those or an end.
  const auto search = [&](std::int64_t a, std::int64_t b) {
    if (a >= b) return;
    best = std::max({best, held(a), held(b - 1)});
    const auto at_chunk_starts = [&](std::int64_t lo, std::int64_t hi, std::int64_t shift) {
      for (std::int64_t g = lo / span; g <= (hi - 1) / span && g * group_ < m_; ++g) {
        const std::int64_t size = group_size_at(g * span);
        for (std::int64_t c = 0; c < v_; ++c) {
          const std::int64_t t = g * span + c * size;
          if (t >= lo && t < hi) best = std::max(best, held(t - shift));
        }
      }
    };
    at_chunk_starts(warmup_ + a + 1, warmup_ + b + 1, warmup_ + 1);  // a forward's new chunk
    at_chunk_starts(a, b, 0);                                        // a backward's
  };
  // The held sum repeats with period `span` while both the forward and the backward stay in the
  // full groups (j <= (G - 1)·span - warm-up - 1): the first period and the rest after it suffice.
  const std::int64_t groups = (m_ + group_ - 1) / group_;
  search(0, std::min(remaining, span));
  search(std::max<std::int64_t>(span, (groups - 1) * span - warmup_), remaining);
  return saturate(best);
}

std::vector<ScheduleStep> pipeline_schedule(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                            std::int64_t virtual_chunks, std::int64_t microbatch_group) {
  const PipelineOrder order(pp_rank, pp, num_microbatches, virtual_chunks, microbatch_group);
  std::vector<ScheduleStep> steps;
  steps.reserve(static_cast<std::size_t>(order.size()));
  for (std::int64_t i = 0; i < order.size(); ++i) steps.push_back(order[i]);
  return steps;
}

std::int64_t max_in_flight_microbatches(std::int64_t pp_rank, std::int64_t pp, std::int64_t num_microbatches,
                                        std::int64_t virtual_chunks, std::int64_t microbatch_group) {
  const PipelineOrder order(pp_rank, pp, num_microbatches, virtual_chunks, microbatch_group);
  return order.peak_held(std::vector<std::int64_t>(static_cast<std::size_t>(virtual_chunks), 1));
}

}  // namespace megasim::models
