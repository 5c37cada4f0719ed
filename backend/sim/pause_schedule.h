// The pauses of one execution unit (a TP group): each of its ranks stops for `pause` at
// phase + k * period for every integer k (the loop ran before the iteration, so a pause may be in
// progress at time 0), on its own phase (Python's garbage collection runs in each rank's
// process separately), and the group's compute waits while any of its ranks is paused (its ranks
// meet at every TP collective, several per layer). The schedule is the union of the ranks' pauses:
// periodic, with the pauses of one period merged into disjoint intervals.
#pragma once

#include <span>
#include <vector>

#include "sim/time.h"

namespace megasim::backend::detail {

class PauseSchedule {
 public:
  PauseSchedule() = default;  // no pauses
  // phases in [0, period), pause in [0, period); a union that covers the whole period (the group
  // could never compute) is the caller's to refuse: covers_period().
  PauseSchedule(std::span<const sim::SimTime> phases, sim::SimTime period, sim::SimTime pause);

  [[nodiscard]] bool empty() const { return intervals_.empty(); }
  // The time per period the group is paused, at most `period`.
  [[nodiscard]] sim::SimTime paused_per_period() const { return paused_; }
  [[nodiscard]] bool covers_period() const { return !empty() && paused_per_period() >= period_; }

  // The extra time a compute task starting at `start` and needing `duration` of compute spends in
  // the pauses: one running at a pause's start waits all of it, one starting inside a pause waits
  // for its rest. 0 without pauses. Needs !covers_period().
  [[nodiscard]] sim::SimTime delay(sim::SimTime start, sim::SimTime duration) const;

 private:
  struct Interval {
    sim::SimTime begin = 0;   // in [0, period)
    sim::SimTime length = 0;  // begin + length may pass the period's end, never the next one's first begin
  };
  sim::SimTime period_ = 0;
  std::vector<Interval> intervals_;  // disjoint, by begin
  sim::SimTime paused_ = 0;          // their total length, at most period_
};

}  // namespace megasim::backend::detail
