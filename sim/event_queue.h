// The pending-event set of a discrete-event simulation: a 4-ary min-heap ordered by
// (time, insertion sequence), so events at the same time run in the order they were scheduled
// (the ns-3 / OMNeT++ / SST convention; never ordering by pointer). Cancellation is by handle and
// O(1): the callback slot is released at once and its stale heap entry is skipped when it surfaces.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/callback.h"
#include "sim/time.h"

namespace megasim::sim {

using EventCallback = Callback;

// Identifies one scheduled event. A default-constructed handle refers to nothing; a handle whose
// event has run or been cancelled is stale and cancelling it again is a harmless no-op.
struct EventHandle {
  std::uint32_t slot = UINT32_MAX;
  std::uint32_t generation = 0;
  [[nodiscard]] bool valid() const { return slot != UINT32_MAX; }
};

class EventQueue {
 public:
  // Schedules fn at absolute time t. The caller (Simulator) checks t against the clock.
  EventHandle push(SimTime t, EventCallback fn);
  // Returns true when the event was pending and is now cancelled.
  bool cancel(EventHandle h);
  [[nodiscard]] bool is_pending(EventHandle h) const;

  struct Popped {
    SimTime time;
    EventCallback fn;
  };
  // Removes and returns the earliest live event, or nullopt when none is left.
  std::optional<Popped> pop();
  // Time of the earliest live event, or kInfiniteTime.
  [[nodiscard]] SimTime next_time();

  [[nodiscard]] std::size_t size() const { return live_; }
  [[nodiscard]] bool empty() const { return live_ == 0; }

 private:
  struct Entry {
    SimTime time;
    std::uint64_t sequence;
    std::uint32_t slot;
    std::uint32_t generation;
  };
  struct Slot {
    EventCallback fn;
    std::uint32_t generation = 0;
    bool pending = false;
  };
  static bool earlier(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time < b.time : a.sequence < b.sequence;
  }
  void release(std::uint32_t slot);
  void drop_stale_top();
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void remove_top();

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::size_t live_ = 0;
};

}  // namespace megasim::sim
