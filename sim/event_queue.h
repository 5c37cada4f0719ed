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
  std::uint64_t sequence = 0;  // the event's insertion sequence number; unique over the queue's life
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
  // 16 bytes, so four children share a cache line: the time, then (sequence << kSlotBits | slot).
  // Ordering by the packed word orders by sequence, since slots only fill the low bits.
  static constexpr int kSlotBits = 26;  // up to 67M events pending at once
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  struct Entry {
    SimTime time;
    std::uint64_t order;
    [[nodiscard]] std::uint32_t slot() const { return static_cast<std::uint32_t>(order & kSlotMask); }
    [[nodiscard]] std::uint64_t sequence() const { return order >> kSlotBits; }
  };
  struct Slot {
    EventCallback fn;
    std::uint64_t sequence = 0;  // sequence of the pending event in this slot
    bool pending = false;
  };
  // One 128-bit comparison (time is never negative), which compiles without branches.
  __extension__ using Key = unsigned __int128;
  static Key key(const Entry& e) { return static_cast<Key>(static_cast<std::uint64_t>(e.time)) << 64 | e.order; }
  static bool earlier(const Entry& a, const Entry& b) { return key(a) < key(b); }
  void release(std::uint32_t slot);
  [[nodiscard]] bool is_live(const Entry& e) const;
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
