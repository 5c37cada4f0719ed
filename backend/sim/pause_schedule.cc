#include "backend/sim/pause_schedule.h"

#include <algorithm>

namespace megasim::backend::detail {

PauseSchedule::PauseSchedule(std::span<const sim::SimTime> phases, sim::SimTime period, sim::SimTime pause)
    : period_(period) {
  if (period <= 0 || pause <= 0 || phases.empty()) return;
  std::vector<sim::SimTime> begins(phases.begin(), phases.end());
  std::sort(begins.begin(), begins.end());
  for (const sim::SimTime begin : begins) {
    if (!intervals_.empty() && begin <= intervals_.back().begin + intervals_.back().length) {
      Interval& last = intervals_.back();
      last.length = std::max(last.length, begin + pause - last.begin);
    } else {
      intervals_.push_back({begin, pause});
    }
  }
  // The period's last pauses may run into the next period's first ones: merge them into the last.
  while (intervals_.size() > 1 &&
         intervals_.back().begin + intervals_.back().length >= period + intervals_.front().begin) {
    Interval& last = intervals_.back();
    last.length = std::max(last.length, period + intervals_.front().begin + intervals_.front().length - last.begin);
    intervals_.erase(intervals_.begin());
  }
  for (const Interval& i : intervals_) paused_ += i.length;
  paused_ = std::min(paused_, period_);
}

sim::SimTime PauseSchedule::delay(sim::SimTime start, sim::SimTime duration) const {
  if (intervals_.empty() || duration <= 0) return 0;
  // Cycles of one period that begin with the first pause: cycle k covers [k P + b0, (k + 1) P + b0)
  // and holds every merged pause whole (none runs past the next cycle's first one). A task walks
  // the cycle it starts in, skips the whole cycles its work spans in closed form (each costs the
  // paused time L and gives the free time F = P - L), and walks the cycle it ends in: O(pauses per
  // period), however short the period.
  const sim::SimTime b0 = intervals_.front().begin;
  const sim::SimTime free = period_ - paused_;                       // > 0: covers_period() is false
  std::int64_t k = (start - b0) >= 0 ? (start - b0) / period_ : -1;  // start >= 0 > b0 - P
  sim::SimTime t = start;
  sim::SimTime remaining = duration;
  sim::SimTime extra = 0;
  for (bool skipped = false;; ++k) {
    const sim::SimTime base = k * period_;
    for (const Interval& i : intervals_) {
      const sim::SimTime at = base + i.begin;
      const sim::SimTime end = at + i.length;
      if (end <= t) continue;  // over before the task got here
      if (at > t) {
        if (remaining <= at - t) return extra;  // done before this pause begins
        remaining -= at - t;
        t = at;
      }
      // Paused: a pause that began before the task got here delays it by its rest.
      extra = sim::add_time(extra, end - t, "a compute task's pauses");
      t = end;
    }
    const sim::SimTime next = base + period_ + b0;
    if (remaining <= next - t) return extra;
    remaining -= next - t;
    t = next;
    if (!skipped && remaining > free) {
      // Whole cycles from here, leaving between 1 and F of work for the last one.
      const std::int64_t cycles = (remaining - 1) / free;
      if (cycles > (sim::kMaxSimTime - t) / period_) {
        sim::throw_time_error("a compute task's end with its pauses",
                              sim::to_seconds(t) + static_cast<double>(cycles) * sim::to_seconds(period_));
      }
      t += cycles * period_;
      extra = sim::add_time(extra, cycles * paused_, "a compute task's pauses");
      remaining -= cycles * free;
      k += cycles;
      skipped = true;
    }
  }
}

}  // namespace megasim::backend::detail
