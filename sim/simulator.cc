#include "sim/simulator.h"

#include <utility>

#include "sim/error.h"

namespace megasim::sim {

bool Simulator::step(SimTime limit) {
  SimTime time = 0;
  std::uint32_t slot = 0;
  if (!queue_.pop_due(limit, time, slot)) return false;
  MEGASIM_ASSERT(time >= now_, "simulated time went backwards");
  now_ = time;
  ++events_processed_;
  queue_.run_and_release(slot);
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
