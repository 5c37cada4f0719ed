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
}

sim::SimTime PauseSchedule::paused_per_period() const {
  sim::SimTime paused = 0;
  for (const Interval& i : intervals_) paused += i.length;
  return std::min(paused, period_);
}

sim::SimTime PauseSchedule::delay(sim::SimTime start, sim::SimTime duration) const {
  if (intervals_.empty()) return 0;
  // From the period before start's: its last pause may reach past the period's end into start
  // (k = -1 too: the pauses are those of a loop that ran before the iteration began).
  const sim::SimTime end = sim::add_time(start, duration, "a compute task's end");
  sim::SimTime extra = 0;
  for (std::int64_t k = start / period_ - 1;; ++k) {
    const sim::SimTime base = k * period_;
    for (const Interval& i : intervals_) {
      const sim::SimTime at = base + i.begin;
      if (at >= sim::add_time(end, extra, "a compute task's end with its pauses")) return extra;
      if (at + i.length <= start) continue;  // over before the task started
      // A pause that began before the task delays its start by its rest; one during it, by all of it.
      extra += at < start ? at + i.length - start : i.length;
    }
  }
}

}  // namespace megasim::backend::detail
