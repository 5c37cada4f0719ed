#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace megasim::sim {
namespace {

TEST(EventQueue, PopsInTimeOrderAndFifoAtEqualTimes) {
  EventQueue q;
  std::vector<int> order;
  q.push(30, [&] { order.push_back(3); });
  q.push(10, [&] { order.push_back(1); });
  q.push(20, [&] { order.push_back(20); });
  q.push(10, [&] { order.push_back(2); });  // same time as the second push: runs after it
  while (auto e = q.pop()) e->fn();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 20, 3}));
}

TEST(EventQueue, CancelledEventNeverRunsAndHandleGoesStale) {
  EventQueue q;
  int ran = 0;
  const EventHandle keep = q.push(5, [&] { ran += 1; });
  const EventHandle drop = q.push(1, [&] { ran += 100; });
  EXPECT_TRUE(q.is_pending(drop));
  EXPECT_TRUE(q.cancel(drop));
  EXPECT_FALSE(q.cancel(drop));  // second cancel is a no-op
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.next_time(), 5);
  while (auto e = q.pop()) e->fn();
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(q.is_pending(keep));
}

TEST(EventQueue, OldHandlesNeverCancelNewerEvents) {
  // Slots are recycled; a handle must stay tied to its own event, never to a later one in its slot.
  EventQueue q;
  std::vector<EventHandle> old;
  for (int round = 0; round < 200; ++round) {
    const EventHandle h = q.push(round, [] {});
    if (round % 3 == 0) {
      EXPECT_TRUE(q.cancel(h));
    } else {
      EXPECT_TRUE(q.pop().has_value());
    }
    for (const EventHandle& stale : old) EXPECT_FALSE(q.cancel(stale));
    old.push_back(h);
    const EventHandle fresh = q.push(round, [] {});
    EXPECT_TRUE(q.is_pending(fresh));
    EXPECT_TRUE(q.cancel(fresh));
  }
  EXPECT_TRUE(q.empty());
}

// Pops the queue's next event, runs it (it appends its id to `ran`) and checks it is the reference's
// first (time, id); advances `now` to its time.
void pop_matches_reference(EventQueue& q, const std::vector<int>& ran, std::vector<std::pair<SimTime, int>>& reference,
                           SimTime& now) {
  auto e = q.pop();
  ASSERT_TRUE(e.has_value());
  e->fn();
  ASSERT_EQ(ran.back(), reference.front().second);
  ASSERT_EQ(e->time, reference.front().first);
  now = e->time;
  reference.erase(reference.begin());
}

// Interleaved pushes and pops with widely spread and with identical times, as a simulation makes
// them, against a reference ordering by (time, sequence).
TEST(EventQueue, InterleavedPushPopMatchesReferenceOrder) {
  EventQueue q;
  std::vector<std::pair<SimTime, int>> expected_order;
  std::vector<std::pair<SimTime, int>> reference;  // pending (time, id), kept sorted by (time, id)
  std::uint64_t state = 99;
  SimTime now = 0;
  int next_id = 0;
  std::vector<int> ran;
  for (int step = 0; step < 20000; ++step) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const bool do_push = reference.empty() || (state >> 60) < 9;
    if (do_push) {
      const SimTime delay =
          (state >> 33) % 7 == 0 ? 0 : static_cast<SimTime>((state >> 20) % (1u << ((state >> 50) % 30)));
      const int id = next_id++;
      q.push(now + delay, [&ran, id] { ran.push_back(id); });
      reference.insert(std::upper_bound(reference.begin(), reference.end(), std::make_pair(now + delay, id)),
                       {now + delay, id});
    } else {
      ASSERT_NO_FATAL_FAILURE(pop_matches_reference(q, ran, reference, now));
    }
  }
  EXPECT_EQ(q.size(), reference.size());
}

// Bursts of events at a few nearby times, pushed before and after later ones of the same bucket, with
// cancellations (often of the event just pushed: a bucket's last insert, where the next insert's walk
// may start) and pops in between, against a reference ordering by (time, sequence).
TEST(EventQueue, BurstsWithCancellationsMatchReferenceOrder) {
  EventQueue q;
  std::vector<std::pair<SimTime, int>> reference;  // pending (time, id), sorted
  std::vector<std::pair<EventHandle, std::pair<SimTime, int>>> handles;
  std::uint64_t state = 7;
  SimTime now = 0;
  int next_id = 0;
  std::vector<int> ran;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int step = 0; step < 30000; ++step) {
    const std::uint64_t roll = next() % 16;
    if (roll < 9 || reference.empty()) {
      // Mostly four nearby times (bursts at each), some spread over many buckets.
      const std::uint64_t spread = next() % 8 == 0 ? 4096 : 4;
      const SimTime t = now + static_cast<SimTime>(next() % spread) * 3;
      const int id = next_id++;
      handles.push_back({q.push(t, [&ran, id] { ran.push_back(id); }), {t, id}});
      reference.insert(std::upper_bound(reference.begin(), reference.end(), std::make_pair(t, id)), {t, id});
    } else if (roll < 12) {
      const std::size_t pick = next() % 2 == 0 ? handles.size() - 1 : next() % handles.size();
      const bool pending = q.is_pending(handles[pick].first);
      const auto it = std::lower_bound(reference.begin(), reference.end(), handles[pick].second);
      ASSERT_EQ(pending, it != reference.end() && *it == handles[pick].second);
      EXPECT_EQ(q.cancel(handles[pick].first), pending);
      if (pending) reference.erase(it);
    } else {
      ASSERT_NO_FATAL_FAILURE(pop_matches_reference(q, ran, reference, now));
    }
  }
  EXPECT_EQ(q.size(), reference.size());
  while (!reference.empty()) ASSERT_NO_FATAL_FAILURE(pop_matches_reference(q, ran, reference, now));
  EXPECT_TRUE(q.empty());
}

// Aimed at the calendar's layout before its first resize (64 buckets of 1 ns: times 0, 64, 128 and
// 192 share a bucket): the bucket's last insert (F) is cancelled and dropped from the bucket's head,
// and its slot reused by an event of another bucket (X); a later insert into the first bucket must
// not start its walk from that slot. Whatever the layout, the order is checked.
TEST(EventQueue, InsertAfterTheLastInsertWasDroppedKeepsOrder) {
  EventQueue q;
  std::vector<char> order;
  const auto note = [&order](char c) { return [&order, c] { order.push_back(c); }; };
  q.push(0, note('P'));
  q.push(128, note('H'));
  q.push(192, note('T'));
  const EventHandle f = q.push(64, note('F'));
  EXPECT_TRUE(q.cancel(f));
  auto first = q.pop();
  ASSERT_TRUE(first.has_value());
  first->fn();
  EXPECT_EQ(q.next_time(), 128);  // drops F's stale entry
  q.push(1, note('X'));
  q.push(128, note('Y'));
  while (auto e = q.pop()) e->fn();
  EXPECT_EQ(order, (std::vector<char>{'P', 'X', 'H', 'Y', 'T'}));
}

TEST(EventQueue, ManyRandomTimesComeOutSorted) {
  EventQueue q;
  std::uint64_t state = 12345;
  for (int i = 0; i < 10000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    q.push(static_cast<SimTime>(state >> 44), [] {});
  }
  SimTime last = -1;
  std::size_t n = 0;
  while (auto e = q.pop()) {
    EXPECT_GE(e->time, last);
    last = e->time;
    ++n;
  }
  EXPECT_EQ(n, 10000u);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace megasim::sim
