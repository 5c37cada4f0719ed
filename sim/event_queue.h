// The pending-event set of a discrete-event simulation, ordered by (time, insertion sequence): events
// at the same time run in the order they were scheduled (the ns-3 / OMNeT++ / SST convention; never
// ordering by pointer). Cancellation is by handle and O(1): the event's slot is released at once and
// its stale entry is skipped when it is reached.
//
// Structure: a calendar queue (R. Brown, "Calendar queues", CACM 31(10), 1988). Time is cut into
// buckets of 2^width_shift ns; bucket b holds, as a list sorted by (time, sequence), the events whose
// time falls in b modulo the number of buckets. Removal scans forward from the bucket of the last
// removed event, so a pop and a push cost O(1) on average when the width matches the spacing of the
// pending events; the calendar is rebuilt (and the width re-estimated) when the population doubles or
// shrinks four-fold. An event scheduled at the time of the last one in its bucket, the common case
// for bursts of simultaneous events, is appended in O(1); so is one of a burst that lands before a
// later event of its bucket (the walk starts at the bucket's last insert: thousands of flows of
// symmetric replicas completing in the same nanosecond otherwise walked past each other).
//
// Precondition (a DES invariant the Simulator checks): no event is pushed earlier than the last event
// removed, or than the clock set by the caller.
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
  EventQueue();

  // Schedules fn at absolute time t >= 0 (see the precondition above).
  EventHandle push(SimTime t, EventCallback fn);
  // Returns true when the event was pending and is now cancelled.
  bool cancel(EventHandle h);
  [[nodiscard]] bool is_pending(EventHandle h) const {
    if (!h.valid() || h.slot >= num_slots_) return false;
    const Slot& s = slot(h.slot);
    return s.pending && s.sequence == h.sequence;
  }

  // Removes the earliest live event if its time is <= limit: returns its time and slot, with the
  // slot marked not pending but still holding the callback, which the caller runs in place with
  // run_and_release(). Returns false (and changes nothing) when no event is due.
  bool pop_due(SimTime limit, SimTime& time, std::uint32_t& slot_index);
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
  [[nodiscard]] SimTime next_time();

  [[nodiscard]] std::size_t size() const { return live_; }
  [[nodiscard]] bool empty() const { return live_ == 0; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr int kChunkBits = 12;  // slots per storage chunk: 4096
  static constexpr std::uint32_t kChunkMask = (1u << kChunkBits) - 1;
  static constexpr std::uint32_t kMinBuckets = 64;

  struct Slot {
    EventCallback fn;
    std::uint64_t sequence = 0;  // sequence of the event in this slot
    bool pending = false;
  };
  // The calendar's view of an event, indexed by slot: 24 bytes, kept apart from the callbacks so
  // that scanning a bucket touches only these.
  struct Node {
    SimTime time = 0;
    std::uint64_t sequence = 0;
    std::uint32_t next = kNone;
  };
  static bool earlier(const Node& a, const Node& b) {
    return a.time < b.time || (a.time == b.time && a.sequence < b.sequence);
  }
  // Where the earliest event is, as found by a scan that has not yet been committed.
  struct Position {
    std::uint32_t bucket;
    SimTime bucket_top;
  };

  Slot& slot(std::uint32_t i) { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  [[nodiscard]] const Slot& slot(std::uint32_t i) const { return chunks_[i >> kChunkBits][i & kChunkMask]; }
  std::uint32_t acquire_slot();
  [[nodiscard]] bool is_live(std::uint32_t index) const {
    const Slot& s = slot(index);
    return s.pending && s.sequence == nodes_[index].sequence;
  }
  [[nodiscard]] std::uint32_t bucket_of(SimTime t) const {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(t) >> width_shift_) & bucket_mask_;
  }
  [[nodiscard]] SimTime bucket_top_of(SimTime t) const {
    return static_cast<SimTime>(((static_cast<std::uint64_t>(t) >> width_shift_) + 1) << width_shift_);
  }
  void insert(std::uint32_t index);
  void drop_stale_head(std::uint32_t bucket);
  std::optional<Position> find_earliest();
  void rebuild(std::uint32_t buckets);

  std::vector<std::uint32_t> heads_;
  std::vector<std::uint32_t> tails_;
  std::vector<std::uint32_t> fingers_;  // by bucket: the event last inserted there, while in it; or kNone
  std::vector<Node> nodes_;             // by slot index
  std::uint32_t bucket_mask_ = 0;
  int width_shift_ = 0;
  std::uint32_t cursor_ = 0;  // bucket of the last removed event
  SimTime cursor_top_ = 0;    // end of the cursor bucket's current year
  SimTime last_removed_time_ = 0;
  std::size_t in_calendar_ = 0;  // entries in the lists, live or stale
  std::size_t stale_in_calendar_ = 0;

  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t num_slots_ = 0;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::size_t live_ = 0;
};

}  // namespace megasim::sim
