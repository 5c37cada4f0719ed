#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <vector>

namespace megasim::sim {
namespace {

TEST(Simulator, ClockFollowsEventsAndCallbacksCanSchedule) {
  Simulator sim;
  std::vector<SimTime> seen;
  sim.schedule_at(100, [&] {
    seen.push_back(sim.now());
    sim.schedule_after(50, [&] { seen.push_back(sim.now()); });
  });
  sim.schedule_at(120, [&] { seen.push_back(sim.now()); });
  sim.run();
  EXPECT_EQ(seen, (std::vector<SimTime>{100, 120, 150}));
  EXPECT_EQ(sim.now(), 150);
  EXPECT_EQ(sim.events_processed(), 3u);
}

TEST(Simulator, RunUntilStopsAtLimitAndAdvancesClock) {
  Simulator sim;
  int ran = 0;
  sim.schedule_at(10, [&] { ++ran; });
  sim.schedule_at(30, [&] { ++ran; });
  sim.run_until(20);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(sim.now(), 20);
  EXPECT_EQ(sim.events_pending(), 1u);
  sim.run();
  EXPECT_EQ(ran, 2);
}

TEST(Simulator, StopEndsRunAfterCurrentEvent) {
  Simulator sim;
  int ran = 0;
  sim.schedule_at(1, [&] {
    ++ran;
    sim.stop();
  });
  sim.schedule_at(2, [&] { ++ran; });
  sim.run();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(sim.now(), 1);
}

TEST(Simulator, CancelPreventsEvent) {
  Simulator sim;
  bool ran = false;
  const EventHandle h = sim.schedule_at(5, [&] { ran = true; });
  EXPECT_TRUE(sim.cancel(h));
  sim.run();
  EXPECT_FALSE(ran);
}

TEST(SimulatorDeathTest, SchedulingInThePastAborts) {
  Simulator sim;
  sim.schedule_at(10, [&] { sim.schedule_at(5, [] {}); });
  EXPECT_DEATH(sim.run(), "scheduled in the past");
}

TEST(SimTime, ConversionsRoundTrip) {
  EXPECT_EQ(from_seconds(1.5), 1'500'000'000);
  EXPECT_DOUBLE_EQ(to_seconds(2 * kSecond), 2.0);
  EXPECT_EQ(ceil_from_seconds(1e-9 * 0.2), 1);
}

}  // namespace
}  // namespace megasim::sim
