// The pauses of a TP group whose ranks collect garbage on their own phases (pause_schedule.h), with
// delays worked out by hand on a period of 100 ms and pauses of 10 ms (times in ms below).
#include "backend/sim/pause_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace megasim::backend::detail {
namespace {

constexpr sim::SimTime kMs = 1'000'000;
constexpr sim::SimTime kPeriod = 100 * kMs;
constexpr sim::SimTime kPause = 10 * kMs;

PauseSchedule schedule(std::vector<sim::SimTime> phases_ms) {
  for (sim::SimTime& p : phases_ms) p *= kMs;
  return PauseSchedule(phases_ms, kPeriod, kPause);
}

TEST(PauseSchedule, OneRankDelaysByEachPauseItsTaskMeets) {
  const PauseSchedule one = schedule({20});
  EXPECT_EQ(one.delay(0, 15 * kMs), 0);              // [0, 15) ends before the pause at 20
  EXPECT_EQ(one.delay(0, 30 * kMs), kPause);         // runs over [20, 30)
  EXPECT_EQ(one.delay(25 * kMs, 5 * kMs), 5 * kMs);  // starts inside: waits for the rest
  // 200 ms of work from 0 ends at 220, as the third pause begins: two pauses. 1 ms more meets it.
  EXPECT_EQ(one.delay(0, 200 * kMs), 2 * kPause);
  EXPECT_EQ(one.delay(0, 201 * kMs), 3 * kPause);
  EXPECT_EQ(one.paused_per_period(), kPause);
}

TEST(PauseSchedule, RanksOnTheirOwnPhasesAddTheirPauses) {
  // Ranks at 20 and 60: a task of 51 ms from 0 meets both (71 ms in all); one of 50 ms ends at 60,
  // as the second pause begins.
  EXPECT_EQ(schedule({60, 20}).delay(0, 51 * kMs), 2 * kPause);
  EXPECT_EQ(schedule({60, 20}).delay(0, 50 * kMs), kPause);
  EXPECT_EQ(schedule({60, 20}).paused_per_period(), 2 * kPause);
}

TEST(PauseSchedule, OverlappingPausesCountOnce) {
  // Ranks at 20 and 25: the group is paused over [20, 35), 15 ms, not 20.
  const PauseSchedule overlapping = schedule({20, 25});
  EXPECT_EQ(overlapping.paused_per_period(), 15 * kMs);
  EXPECT_EQ(overlapping.delay(0, 50 * kMs), 15 * kMs);
  // Ranks together (a planned collection): one pause.
  EXPECT_EQ(schedule({20, 20, 20}).delay(0, 50 * kMs), kPause);
}

TEST(PauseSchedule, APauseRunningOverThePeriodsEndMergesWithTheNextPeriodsFirst) {
  // Ranks at 95 and 2: paused over [95, 112) of every period, so also over [0, 12) from the pause of
  // the period before time 0; a task of 10 ms from 0 waits until 12.
  const PauseSchedule wrapped = schedule({95, 2});
  EXPECT_EQ(wrapped.paused_per_period(), 17 * kMs);
  EXPECT_EQ(wrapped.delay(0, 10 * kMs), 12 * kMs);
  // From 50, 60 ms of work: [50, 95) is 45 ms, then [112, 127).
  EXPECT_EQ(wrapped.delay(50 * kMs, 60 * kMs), 17 * kMs);
}

TEST(PauseSchedule, SaysWhenTheRanksLeaveNoTimeToCompute) {
  EXPECT_FALSE(schedule({0, 30, 60}).covers_period());
  EXPECT_TRUE(schedule({0, 10, 20, 30, 40, 50, 60, 70, 80, 90}).covers_period());
  EXPECT_TRUE(PauseSchedule().empty());
  EXPECT_EQ(PauseSchedule().delay(5 * kMs, 5 * kMs), 0);
}

// However short the period, a task's delay takes a few steps: a task of 1 s on a period of 2 ns
// paused half the time waits 1 s.
TEST(PauseSchedule, ShortPeriodsCostNoTimeToCompute) {
  const std::vector<sim::SimTime> phases = {0};
  const PauseSchedule dense(phases, 2, 1);
  EXPECT_EQ(dense.delay(0, sim::kSecond), sim::kSecond);
  EXPECT_EQ(dense.delay(1, sim::kSecond), sim::kSecond - 1);  // starts in the free half
}

// The delay in closed form against a walk of every nanosecond: the task works in each nanosecond
// no rank of its group is paused in (every integer period, before time 0 too), until its work is
// done.
sim::SimTime walked_delay(const std::vector<sim::SimTime>& phases, sim::SimTime period, sim::SimTime pause,
                          sim::SimTime start, sim::SimTime duration) {
  sim::SimTime worked = 0;
  sim::SimTime extra = 0;
  for (sim::SimTime t = start; worked < duration; ++t) {
    bool paused = false;
    for (const sim::SimTime p : phases) paused = paused || ((t - p) % period + period) % period < pause;
    (paused ? extra : worked) += 1;
  }
  return extra;
}

TEST(PauseSchedule, AgreesWithAWalkOfEveryNanosecond) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const sim::SimTime period = 2 + static_cast<sim::SimTime>(rng() % 40);
    const auto ranks = static_cast<std::size_t>(1 + rng() % 4);
    const sim::SimTime pause = 1 + static_cast<sim::SimTime>(rng() % static_cast<std::uint64_t>(period / 2));
    std::vector<sim::SimTime> phases(ranks);
    for (sim::SimTime& p : phases) p = static_cast<sim::SimTime>(rng() % static_cast<std::uint64_t>(period));
    const PauseSchedule schedule(phases, period, pause);
    if (schedule.covers_period()) continue;
    const auto start = static_cast<sim::SimTime>(rng() % 200);
    const auto duration = static_cast<sim::SimTime>(rng() % 400);
    ASSERT_EQ(schedule.delay(start, duration), walked_delay(phases, period, pause, start, duration))
        << "period " << period << ", pause " << pause << ", " << ranks << " ranks, start " << start << ", duration "
        << duration;
  }
}

}  // namespace
}  // namespace megasim::backend::detail
