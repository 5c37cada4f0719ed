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
  const Entry moving = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!earlier(moving, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = moving;
}

// Floyd's bottom-up deletion: walk the hole at `i` down to a leaf along the smallest children (three
// comparisons per level, none against the moving entry), then sift the moving entry up from there;
// it came from the bottom of the heap, so it rarely climbs far.
void EventQueue::sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  const Entry moving = heap_[i];
  while (true) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t last = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < last; ++c) {
      if (earlier(heap_[c], heap_[best])) best = c;
    }
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = moving;
  sift_up(i);
}

void EventQueue::remove_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

EventHandle EventQueue::push(SimTime t, EventCallback fn) {
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  MEGASIM_ASSERT(slot <= kSlotMask, "too many events pending at once");
  MEGASIM_ASSERT(next_sequence_ < (std::uint64_t{1} << (64 - kSlotBits)), "event sequence numbers exhausted");
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.pending = true;
  s.sequence = next_sequence_++;
  heap_.push_back(Entry{t, s.sequence << kSlotBits | slot});
  sift_up(heap_.size() - 1);
  ++live_;
  return EventHandle{slot, s.sequence};
}

bool EventQueue::is_pending(EventHandle h) const {
  return h.valid() && h.slot < slots_.size() && slots_[h.slot].pending && slots_[h.slot].sequence == h.sequence;
}

bool EventQueue::cancel(EventHandle h) {
  if (!is_pending(h)) return false;
  release(h.slot);
  --live_;
  return true;
}

void EventQueue::release(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.fn = nullptr;
  s.pending = false;  // the heap entry and every handle of this event are now stale
  free_slots_.push_back(slot);
}

bool EventQueue::is_live(const Entry& e) const {
  const Slot& s = slots_[e.slot()];
  return s.pending && s.sequence == e.sequence();
}

void EventQueue::drop_stale_top() {
  while (!heap_.empty() && !is_live(heap_.front())) remove_top();
}

std::optional<EventQueue::Popped> EventQueue::pop() {
  drop_stale_top();
  if (heap_.empty()) return std::nullopt;
  const Entry e = heap_.front();
  remove_top();
  Popped out{e.time, std::move(slots_[e.slot()].fn)};
  release(e.slot());
  --live_;
  return out;
}

SimTime EventQueue::next_time() {
  drop_stale_top();
  return heap_.empty() ? kInfiniteTime : heap_.front().time;
}

}  // namespace megasim::sim
