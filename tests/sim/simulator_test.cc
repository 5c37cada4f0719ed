#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
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

// The limit is 2^62 ns (sim/time.h): 4,611,686,018.427... s. Conversions refuse what is past it, or
// not a duration at all, with SimTimeError (a ConfigError: exit code 2), never a wrapped value.
TEST(SimTime, ConversionsRefuseTimesPastTheLimitOrNotANumber) {
  EXPECT_EQ(kMaxSimTime, 4'611'686'018'427'387'904);
  EXPECT_EQ(from_seconds(4.6e9), 4'600'000'000'000'000'000);
  for (const double bad : {4.7e9, 1e300, HUGE_VAL, -1e-9, -HUGE_VAL, std::nan("")}) {
    EXPECT_THROW(from_seconds(bad, "x"), SimTimeError) << bad;
    EXPECT_THROW(ceil_from_seconds(bad, "x"), SimTimeError) << bad;
    EXPECT_THROW(from_nanoseconds(bad * 1e9, "x"), SimTimeError) << bad;
    EXPECT_THROW(ceil_from_nanoseconds(bad * 1e9, "x"), SimTimeError) << bad;
  }
  try {
    from_seconds(1e12, "a flow's end (check cluster.nic_gbps)");
    FAIL() << "accepted 1e12 s";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("simulated time overflows: a flow's end (check cluster.nic_gbps) is 1e+12 s"),
              std::string::npos)
        << what;
  }
}

TEST(SimTime, AdditionIsCheckedAgainstTheLimit) {
  EXPECT_EQ(add_time(kMaxSimTime - 5, 5), kMaxSimTime);
  EXPECT_THROW(add_time(kMaxSimTime - 5, 6), SimTimeError);
  // Both operands at the limit: their sum, 2^63, would already wrap int64.
  EXPECT_THROW(add_time(kMaxSimTime, kMaxSimTime), SimTimeError);
}

// Scheduling past the limit throws before anything is queued; the simulation is left as it was.
TEST(Simulator, SchedulingPastTheLimitThrowsAndQueuesNothing) {
  Simulator sim;
  sim.schedule_at(10, [] {});
  EXPECT_THROW(sim.schedule_at(kMaxSimTime + 1, [] {}), SimTimeError);
  EXPECT_THROW(sim.schedule_after(kMaxSimTime + 1, [] {}), SimTimeError);
  EXPECT_EQ(sim.events_pending(), 1u);
  sim.run();
  EXPECT_EQ(sim.now(), 10);
  EXPECT_THROW(sim.schedule_after(kMaxSimTime - 9, [] {}), SimTimeError);  // 10 + 2^62 - 9 = 2^62 + 1
  EXPECT_NO_THROW(sim.schedule_after(kMaxSimTime - 10, [] {}));            // exactly 2^62
  EXPECT_EQ(sim.events_pending(), 1u);
}

TEST(SimTime, ConversionsRoundTrip) {
  EXPECT_EQ(from_seconds(1.5), 1'500'000'000);
  EXPECT_DOUBLE_EQ(to_seconds(2 * kSecond), 2.0);
  EXPECT_EQ(ceil_from_seconds(1e-9 * 0.2), 1);
}

}  // namespace
}  // namespace megasim::sim
