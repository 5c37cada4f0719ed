#include "sim/event_queue.h"

#include <algorithm>
#include <utility>

namespace megasim::sim {

EventHandle EventQueue::push(SimTime t, EventCallback fn) {
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.pending = true;
  heap_.push_back(Entry{t, next_sequence_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), later);
  ++live_;
  return EventHandle{slot, s.generation};
}

bool EventQueue::is_pending(EventHandle h) const {
  return h.valid() && h.slot < slots_.size() && slots_[h.slot].pending && slots_[h.slot].generation == h.generation;
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
  s.pending = false;
  ++s.generation;  // invalidates the heap entry and every outstanding handle
  free_slots_.push_back(slot);
}

void EventQueue::drop_stale_top() {
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    if (slots_[top.slot].generation == top.generation) return;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
  }
}

std::optional<EventQueue::Popped> EventQueue::pop() {
  drop_stale_top();
  if (heap_.empty()) return std::nullopt;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const Entry e = heap_.back();
  heap_.pop_back();
  Popped out{e.time, std::move(slots_[e.slot].fn)};
  release(e.slot);
  --live_;
  return out;
}

SimTime EventQueue::next_time() {
  drop_stale_top();
  return heap_.empty() ? kInfiniteTime : heap_.front().time;
}

}  // namespace megasim::sim
