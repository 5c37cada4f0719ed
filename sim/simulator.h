// The simulation object: a clock and the event queue it owns. There are no globals, so any number
// of simulations can run side by side (for example one per thread in a sweep).
#pragma once

#include <cstdint>
#include <utility>

#include "sim/error.h"
#include "sim/event_queue.h"
#include "sim/time.h"

namespace megasim::sim {

class Simulator {
 public:
  [[nodiscard]] SimTime now() const { return now_; }

  // Schedules fn at absolute time t, now() <= t <= kMaxSimTime. Scheduling in the past is an internal
  // error; a time past kMaxSimTime throws SimTimeError (time.h): the inputs asked for more than 146
  // years, which no conversion may wrap into the past.
  EventHandle schedule_at(SimTime t, EventCallback fn) {
    MEGASIM_ASSERT(t >= now_, "an event was scheduled in the past");
    if (t > kMaxSimTime) throw_time_error("an event's time", to_seconds(t));
    return queue_.push(t, std::move(fn));
  }
  // Schedules fn after a delay in [0, kMaxSimTime]; throws SimTimeError when now() + delay passes
  // kMaxSimTime.
  EventHandle schedule_after(SimTime delay, EventCallback fn) {
    MEGASIM_ASSERT(delay >= 0, "an event was scheduled after a negative delay");
    if (delay > kMaxSimTime) throw_time_error("an event's delay", to_seconds(delay));
    return queue_.push(add_time(now_, delay), std::move(fn));
  }
  bool cancel(EventHandle h) { return queue_.cancel(h); }
  [[nodiscard]] bool is_pending(EventHandle h) const { return queue_.is_pending(h); }

  // Runs events until the queue is empty or stop() is called.
  void run();
  // Runs every event with time <= t, then sets the clock to t (if it was not stopped earlier).
  void run_until(SimTime t);
  // Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  [[nodiscard]] std::uint64_t events_processed() const { return events_processed_; }
  [[nodiscard]] std::size_t events_pending() const { return queue_.size(); }

 private:
  bool step(SimTime limit);

  EventQueue queue_;
  SimTime now_ = 0;
  std::uint64_t events_processed_ = 0;
  bool stopped_ = false;
};

}  // namespace megasim::sim
