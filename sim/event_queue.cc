#include "sim/event_queue.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace megasim::sim {

EventQueue::EventQueue() {
  rebuild(kMinBuckets);
}

std::uint32_t EventQueue::acquire_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t i = free_slots_.back();
    free_slots_.pop_back();
    return i;
  }
  MEGASIM_ASSERT(num_slots_ < kNone, "too many events pending at once");
  if ((num_slots_ & kChunkMask) == 0) chunks_.push_back(std::make_unique<Slot[]>(std::size_t{1} << kChunkBits));
  nodes_.emplace_back();
  return num_slots_++;
}

EventHandle EventQueue::push(SimTime t, EventCallback fn) {
  const std::uint32_t index = acquire_slot();
  Slot& s = slot(index);
  s.fn = std::move(fn);
  s.pending = true;
  s.sequence = next_sequence_++;
  nodes_[index] = Node{t, s.sequence, kNone};
  insert(index);
  ++live_;
  if (in_calendar_ > 2 * heads_.size()) rebuild(static_cast<std::uint32_t>(heads_.size() * 2));
  return EventHandle{index, s.sequence};
}

// Sorted insert; appending after the bucket's tail is the fast path.
void EventQueue::insert(std::uint32_t index) {
  Node& node = nodes_[index];
  const std::uint32_t b = bucket_of(node.time);
  ++in_calendar_;
  if (heads_[b] == kNone) {
    heads_[b] = tails_[b] = fingers_[b] = index;
    return;
  }
  if (!earlier(node, nodes_[tails_[b]])) {
    nodes_[tails_[b]].next = index;
    tails_[b] = fingers_[b] = index;
    return;
  }
  if (earlier(node, nodes_[heads_[b]])) {
    node.next = heads_[b];
    heads_[b] = fingers_[b] = index;
    return;
  }
  // The walk starts at the bucket's last insert when that is not later: a burst of events at one
  // time, inserted before a later event of the bucket, then costs O(1) each rather than a walk past
  // the burst.
  const std::uint32_t finger = fingers_[b];
  std::uint32_t at = finger != kNone && !earlier(node, nodes_[finger]) ? finger : heads_[b];
  while (!earlier(node, nodes_[nodes_[at].next])) at = nodes_[at].next;
  node.next = nodes_[at].next;
  nodes_[at].next = index;
  fingers_[b] = index;
}

bool EventQueue::cancel(EventHandle h) {
  if (!is_pending(h)) return false;
  Slot& s = slot(h.slot);
  s.pending = false;  // its calendar entry is now stale and is dropped when it reaches a bucket head
  s.fn = nullptr;
  --live_;
  ++stale_in_calendar_;
  return true;
}

// Stale entries keep their slot out of the free list until they leave the calendar, so a slot is
// never in two places at once.
void EventQueue::drop_stale_head(std::uint32_t bucket) {
  if (stale_in_calendar_ == 0) return;  // checking liveness touches the slot: skip it when possible
  std::uint32_t h = heads_[bucket];
  while (h != kNone && !is_live(h)) {
    const std::uint32_t next = nodes_[h].next;
    if (fingers_[bucket] == h) fingers_[bucket] = kNone;
    --in_calendar_;
    --stale_in_calendar_;
    free_slots_.push_back(h);
    h = next;
  }
  heads_[bucket] = h;
  if (h == kNone) tails_[bucket] = kNone;
}

std::optional<EventQueue::Position> EventQueue::find_earliest() {
  if (live_ == 0) return std::nullopt;
  std::uint32_t b = cursor_;
  SimTime top = cursor_top_;
  for (std::size_t scanned = 0; scanned < heads_.size(); ++scanned) {
    drop_stale_head(b);
    if (heads_[b] != kNone && nodes_[heads_[b]].time < top) return Position{b, top};
    b = (b + 1) & bucket_mask_;
    top += SimTime{1} << width_shift_;
  }
  // A whole year without a due event: the pending events are sparse; find the earliest directly.
  std::uint32_t best = kNone;
  for (std::uint32_t i = 0; i < heads_.size(); ++i) {
    drop_stale_head(i);
    if (heads_[i] != kNone && (best == kNone || earlier(nodes_[heads_[i]], nodes_[best]))) best = heads_[i];
  }
  const SimTime t = nodes_[best].time;
  return Position{bucket_of(t), bucket_top_of(t)};
}

bool EventQueue::pop_due(SimTime limit, SimTime& time, std::uint32_t& slot_index) {
  const std::optional<Position> at = find_earliest();
  if (!at) return false;
  const std::uint32_t index = heads_[at->bucket];
  if (nodes_[index].time > limit) return false;
  cursor_ = at->bucket;
  cursor_top_ = at->bucket_top;
  heads_[at->bucket] = nodes_[index].next;
  if (heads_[at->bucket] == kNone) tails_[at->bucket] = kNone;
  if (fingers_[at->bucket] == index) fingers_[at->bucket] = kNone;
  --in_calendar_;
  --live_;
  time = nodes_[index].time;
  last_removed_time_ = time;
  slot_index = index;
  slot(index).pending = false;
  if (heads_.size() > kMinBuckets && in_calendar_ < heads_.size() / 4) {
    rebuild(static_cast<std::uint32_t>(heads_.size() / 2));
  }
  return true;
}

SimTime EventQueue::next_time() {
  const std::optional<Position> at = find_earliest();
  return at ? nodes_[heads_[at->bucket]].time : kInfiniteTime;
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

// Re-lays the live events over `buckets` buckets (a power of two) whose width is the mean spacing of
// the earlier half of the pending events, rounded to a power of two (Brown's rule, which samples the
// spacing near the head: a few distant events, such as compute ends far ahead of many flow
// completions, would otherwise widen every bucket for the near ones).
void EventQueue::rebuild(std::uint32_t buckets) {
  std::vector<std::uint32_t> live;
  live.reserve(live_);
  for (std::uint32_t head : heads_) {
    for (std::uint32_t i = head; i != kNone; i = nodes_[i].next) {
      if (is_live(i)) {
        live.push_back(i);
      } else {
        free_slots_.push_back(i);
      }
    }
  }
  std::sort(live.begin(), live.end(),
            [this](std::uint32_t a, std::uint32_t b) { return earlier(nodes_[a], nodes_[b]); });
  width_shift_ = 0;
  if (live.size() > 1) {
    const std::size_t k = std::max<std::size_t>(1, live.size() / 2);
    const auto span = static_cast<std::uint64_t>(nodes_[live[k]].time - nodes_[live.front()].time);
    const std::uint64_t spacing = std::max<std::uint64_t>(1, span / k);
    width_shift_ = static_cast<int>(std::bit_width(spacing)) - 1;
  }
  stale_in_calendar_ = 0;
  heads_.assign(buckets, kNone);
  tails_.assign(buckets, kNone);
  fingers_.assign(buckets, kNone);
  bucket_mask_ = buckets - 1;
  in_calendar_ = 0;
  for (const std::uint32_t i : live) {
    nodes_[i].next = kNone;
    insert(i);  // sorted order, so every insert is an append
  }
  // Events may still be pushed at any time from the last removed one on, so the scan restarts there
  // (not at the earliest pending event).
  cursor_ = bucket_of(last_removed_time_);
  cursor_top_ = bucket_top_of(last_removed_time_);
}

}  // namespace megasim::sim
