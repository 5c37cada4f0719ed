#include "sim/event_queue.h"

#include <gtest/gtest.h>

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

TEST(EventQueue, ReusedSlotDoesNotResurrectOldHandle) {
  EventQueue q;
  const EventHandle first = q.push(1, [] {});
  ASSERT_TRUE(q.cancel(first));
  const EventHandle second = q.push(2, [] {});
  EXPECT_EQ(first.slot, second.slot);  // the slot is reused...
  EXPECT_FALSE(q.cancel(first));       // ...but the old handle cannot cancel the new event
  EXPECT_TRUE(q.is_pending(second));
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
