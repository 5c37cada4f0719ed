#include "sim/simulator.h"

#include <utility>

#include "sim/error.h"

namespace megasim::sim {

EventHandle Simulator::schedule_at(SimTime t, EventCallback fn) {
  MEGASIM_ASSERT(t >= now_, "an event was scheduled in the past");
  return queue_.push(t, std::move(fn));
}

bool Simulator::step(SimTime limit) {
  const SimTime next = queue_.next_time();
  if (next == kInfiniteTime || next > limit) return false;
  auto event = queue_.pop();
  MEGASIM_ASSERT(event->time >= now_, "simulated time went backwards");
  now_ = event->time;
  ++events_processed_;
  event->fn();
  return true;
}

void Simulator::run() {
  stopped_ = false;
  while (!stopped_ && step(kInfiniteTime)) {
  }
}

void Simulator::run_until(SimTime t) {
  stopped_ = false;
  while (!stopped_ && step(t)) {
  }
  if (!stopped_ && t > now_) now_ = t;
}

}  // namespace megasim::sim
