// The pending-event set of a discrete-event simulation: a 4-ary min-heap ordered by
// (time, insertion sequence), so events at the same time run in the order they were scheduled
// (the ns-3 / OMNeT++ / SST convention; never ordering by pointer). Cancellation is by handle and
// O(1): the callback slot is released at once and its stale heap entry is skipped when it surfaces.
//
// The hot paths are inline: an event costs one heap push, one heap pop and one indirect call.
// Callbacks live in slots with stable addresses (chunked storage), so a callback runs in place even
// while it schedules new events.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "sim/callback.h"
#include "sim/error.h"
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
  // Schedules fn at absolute time t >= 0. The caller (Simulator) checks t against the clock.
  EventHandle push(SimTime t, EventCallback fn) {
    const std::uint32_t index = acquire_slot();
    Slot& s = slot(index);
    s.fn = std::move(fn);
    s.pending = true;
    s.sequence = next_sequence_++;
    MEGASIM_ASSERT(s.sequence < kMaxSequence, "event sequence numbers exhausted");
    heap_.push_back(Entry{t, s.sequence << kSlotBits | index});
    sift_up(heap_.size() - 1);
    ++live_;
    return EventHandle{index, s.sequence};
  }

  // Returns true when the event was pending and is now cancelled.
  bool cancel(EventHandle h);
  [[nodiscard]] bool is_pending(EventHandle h) const {
    if (!h.valid() || h.slot >= num_slots_) return false;
    const Slot& s = slot(h.slot);
    return s.pending && s.sequence == h.sequence;
  }

  // Removes the earliest live event if its time is <= limit: returns its time and slot, with the
  // slot marked not pending but still holding the callback. The caller runs it in place with
  // run_and_release(). Returns false when no event is due.
  bool pop_due(SimTime limit, SimTime& time, std::uint32_t& slot_index) {
    drop_stale_top();
    if (heap_.empty() || heap_.front().time > limit) return false;
    const Entry e = heap_.front();
    remove_top();
    time = e.time;
    slot_index = e.slot();
    slot(slot_index).pending = false;
    --live_;
    return true;
  }
  void run_and_release(std::uint32_t slot_index) {
    Slot& s = slot(slot_index);
    s.fn();
    s.fn = nullptr;
    free_slots_.push_back(slot_index);
  }

  struct Popped {
    SimTime time;
    EventCallback fn;
  };
  // Removes and returns the earliest live event, or nullopt when none is left.
  std::optional<Popped> pop();
  // Time of the earliest live event, or kInfiniteTime.
  [[nodiscard]] SimTime next_time() {
    drop_stale_top();
    return heap_.empty() ? kInfiniteTime : heap_.front().time;
  }

  [[nodiscard]] std::size_t size() const { return live_; }
  [[nodiscard]] bool empty() const { return live_ == 0; }

 private:
  // 16 bytes, so four children share a cache line: the time, then (sequence << kSlotBits | slot).
  // Ordering by the packed word orders by sequence, since slots only fill the low bits.
  static constexpr int kSlotBits = 26;  // up to 67M events pending at once
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  static constexpr std::uint64_t kMaxSequence = std::uint64_t{1} << (64 - kSlotBits);
  static constexpr int kChunkBits = 12;  // slots per storage chunk: 4096
  static constexpr std::uint32_t kChunkMask = (1u << kChunkBits) - 1;

  struct Entry {
    SimTime time;
    std::uint64_t order;
    [[nodiscard]] std::uint32_t slot() const { return static_cast<std::uint32_t>(order & kSlotMask); }
    [[nodiscard]] std::uint64_t sequence() const { return order >> kSlotBits; }
  };
  struct Slot {
    EventCallback fn;
    std::uint64_t sequence = 0;  // sequence of the event in this slot
    bool pending = false;
  };
  // One 128-bit comparison (time is never negative), which compiles without branches.
  __extension__ using Key = unsigned __int128;
  static Key key(const Entry& e) { return static_cast<Key>(static_cast<std::uint64_t>(e.time)) << 64 | e.order; }
  static bool earlier(const Entry& a, const Entry& b) { return key(a) < key(b); }

  Slot& slot(std::uint32_t i) { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  [[nodiscard]] const Slot& slot(std::uint32_t i) const { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  std::uint32_t acquire_slot() {
    if (!free_slots_.empty()) {
      const std::uint32_t i = free_slots_.back();
      free_slots_.pop_back();
      return i;
    }
    return grow_slots();
  }
  std::uint32_t grow_slots();
  [[nodiscard]] bool is_live(const Entry& e) const {
    const Slot& s = slot(e.slot());
    return s.pending && s.sequence == e.sequence();
  }
  // Cancelled events leave stale heap entries; checking the top against its slot costs a cache
  // miss, so it is skipped while no cancelled entry remains in the heap.
  void drop_stale_top() {
    while (stale_in_heap_ > 0 && !heap_.empty() && !is_live(heap_.front())) {
      remove_top();
      --stale_in_heap_;
    }
  }
  void remove_top() {
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
  }
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);

  std::vector<Entry> heap_;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t num_slots_ = 0;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::size_t live_ = 0;
  std::size_t stale_in_heap_ = 0;
};

}  // namespace megasim::sim
