#include "sim/event_queue.h"

#include <utility>

#include "sim/error.h"

namespace megasim::sim {

// A 4-ary heap: half the depth of a binary heap and its children share a cache line, which is what
// bounds the pop cost once the pending set outgrows the L1 cache.
namespace {
constexpr std::size_t kArity = 4;
}

void EventQueue::sift_up(std::size_t i) {
  Entry* const h = heap_.data();
  const Entry moving = h[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!earlier(moving, h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = moving;
}

// Moves the entry at `i` down: at each level a three-comparison tournament finds the smallest of
// four children, and the walk stops as soon as the moving entry is not later than it.
void EventQueue::sift_down(std::size_t i) {
  Entry* const h = heap_.data();
  const std::size_t n = heap_.size();
  const Entry moving = h[i];
  while (true) {
    const std::size_t first = i * kArity + 1;
    std::size_t best = first;
    if (first + kArity <= n) {
      const std::size_t a = earlier(h[first + 1], h[first]) ? first + 1 : first;
      const std::size_t b = earlier(h[first + 3], h[first + 2]) ? first + 3 : first + 2;
      best = earlier(h[b], h[a]) ? b : a;
    } else if (first < n) {
      for (std::size_t c = first + 1; c < n; ++c) {
        if (earlier(h[c], h[best])) best = c;
      }
    } else {
      break;
    }
    if (!earlier(h[best], moving)) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = moving;
}

std::uint32_t EventQueue::grow_slots() {
  MEGASIM_ASSERT(num_slots_ <= kSlotMask, "too many events pending at once");
  if ((num_slots_ & kChunkMask) == 0) chunks_.push_back(std::make_unique<Slot[]>(std::size_t{1} << kChunkBits));
  return num_slots_++;
}

bool EventQueue::cancel(EventHandle h) {
  if (!is_pending(h)) return false;
  Slot& s = slot(h.slot);
  s.pending = false;  // the heap entry and every handle of this event are now stale
  s.fn = nullptr;
  free_slots_.push_back(h.slot);
  --live_;
  ++stale_in_heap_;
  return true;
}

std::optional<EventQueue::Popped> EventQueue::pop() {
  SimTime time = 0;
  std::uint32_t index = 0;
  if (!pop_due(kInfiniteTime, time, index)) return std::nullopt;
  Popped out{time, std::move(slot(index).fn)};
  slot(index).fn = nullptr;
  free_slots_.push_back(index);
  return out;
}

}  // namespace megasim::sim
