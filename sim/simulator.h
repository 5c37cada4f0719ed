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

  // Schedules fn at absolute time t >= now(); scheduling in the past is an internal error.
  EventHandle schedule_at(SimTime t, EventCallback fn) {
    MEGASIM_ASSERT(t >= now_, "an event was scheduled in the past");
    return queue_.push(t, std::move(fn));
  }
  // Schedules fn after a delay >= 0.
  EventHandle schedule_after(SimTime delay, EventCallback fn) { return schedule_at(now_ + delay, std::move(fn)); }
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
