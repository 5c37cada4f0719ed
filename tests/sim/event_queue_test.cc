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
      auto e = q.pop();
      ASSERT_TRUE(e.has_value());
      e->fn();
      ASSERT_EQ(ran.back(), reference.front().second);
      ASSERT_EQ(e->time, reference.front().first);
      now = e->time;
      reference.erase(reference.begin());
    }
  }
  EXPECT_EQ(q.size(), reference.size());
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
