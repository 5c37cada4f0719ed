// simulate_schedule_ideal: list scheduling of the per-rank step orders over the data dependencies
// of a pipeline. Each rank is a chain of steps in its schedule order and each step also waits for
// the steps that produce its inputs, so a step's end is max(previous step on the rank, inputs) +
// its duration. The passes below resolve steps rank by rank until every rank is done; the order in
// which ranks are visited does not change the times (they are a longest-path computation).
#include <algorithm>
#include <cstddef>
#include <vector>

#include "models/pipeline_schedule.h"
#include "sim/error.h"

namespace megasim::models {

double simulate_schedule_ideal(std::int64_t pp, std::int64_t num_microbatches, std::int64_t virtual_chunks,
                               double t_fwd_per_chunk, double t_bwd_per_chunk, std::int64_t microbatch_group) {
  validate_pipeline_schedule(pp, num_microbatches, virtual_chunks, microbatch_group);
  MEGASIM_ASSERT(t_fwd_per_chunk >= 0 && t_bwd_per_chunk >= 0, "step times must be >= 0");
  const std::int64_t stages = pp * virtual_chunks;
  constexpr double kNotDone = -1.0;
  // End time of the forward / backward of (micro-batch mb, virtual stage k), at index mb·stages + k.
  const auto slots = static_cast<std::size_t>(num_microbatches * stages);
  std::vector<double> fwd_end(slots, kNotDone);
  std::vector<double> bwd_end(slots, kNotDone);

  std::vector<std::vector<ScheduleStep>> orders;
  for (std::int64_t r = 0; r < pp; ++r)
    orders.push_back(pipeline_schedule(r, pp, num_microbatches, virtual_chunks, microbatch_group));
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> rank_free(static_cast<std::size_t>(pp), 0.0);

  std::size_t remaining = 2 * slots;
  while (remaining > 0) {
    std::size_t resolved = 0;
    for (std::int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      for (; next[ri] < orders[ri].size(); ++next[ri], ++resolved) {
        const ScheduleStep& step = orders[ri][next[ri]];
        const std::int64_t k = virtual_stage_of(r, step.chunk, pp);
        const auto idx = static_cast<std::size_t>(step.microbatch * stages + k);
        double ready = 0.0;
        if (step.pass == PassKind::kForward) {
          if (k > 0) ready = fwd_end[idx - 1];
        } else {
          ready = fwd_end[idx];
          if (k + 1 < stages) ready = bwd_end[idx + 1] == kNotDone ? kNotDone : std::max(ready, bwd_end[idx + 1]);
        }
        if (ready == kNotDone) break;
        const double end =
            std::max(rank_free[ri], ready) + (step.pass == PassKind::kForward ? t_fwd_per_chunk : t_bwd_per_chunk);
        (step.pass == PassKind::kForward ? fwd_end : bwd_end)[idx] = end;
        rank_free[ri] = end;
      }
    }
    MEGASIM_ASSERT(resolved > 0, "pipeline schedule deadlocks: no rank can make progress");
    remaining -= resolved;
  }
  double makespan = 0.0;
  for (double t : rank_free) makespan = std::max(makespan, t);
  return makespan;
}

}  // namespace megasim::models
