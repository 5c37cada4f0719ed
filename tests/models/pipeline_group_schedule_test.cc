// The interleaved schedule with a tunable number N of contiguous micro-batches per model chunk
// (Megatron-LM's microbatch_group_size_per_vp_stage; Llama 3's N), and the memory peak of a
// schedule weighted by the chunks' sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "models/pipeline_schedule.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

constexpr PassKind F = PassKind::kForward;
constexpr PassKind B = PassKind::kBackward;

struct GroupCase {
  std::int64_t pp, m, v, n;
};
// Groups dividing m, groups leaving a last group of at least pp, N = m (breadth-first), N = pp.
const std::vector<GroupCase> kGroupCases = {{2, 5, 2, 3},    {2, 4, 2, 2},  {4, 8, 2, 4},  {4, 8, 3, 8},
                                            {4, 12, 2, 8},   {4, 6, 2, 6},  {3, 7, 3, 4},  {8, 16, 8, 8},
                                            {8, 32, 8, 16},  {4, 4, 2, 4},  {5, 13, 2, 8}, {16, 32, 8, 16},
                                            {16, 16, 8, 16}, {3, 11, 4, 4}, {2, 9, 5, 7},  {6, 20, 3, 7}};

std::vector<ScheduleStep> passes(const std::vector<ScheduleStep>& steps, PassKind pass) {
  std::vector<ScheduleStep> out;
  std::copy_if(steps.begin(), steps.end(), std::back_inserter(out),
               [&](const ScheduleStep& s) { return s.pass == pass; });
  return out;
}

// Megatron-LM's own example in forward_backward_pipelining_with_interleaving: PP 2, N 3, M 5, VP 2
// runs micro-batches 0 1 2 0 1 2 3 4 3 4 through chunks 0 0 0 1 1 1 0 0 1 1; backwards take the
// same micro-batches through the reversed chunks.
TEST(GroupedSchedule, MegatronsTableForPp2N3M5Vp2) {
  const std::vector<int> microbatch = {0, 1, 2, 0, 1, 2, 3, 4, 3, 4};
  const std::vector<int> chunk = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  for (std::int64_t r = 0; r < 2; ++r) {
    const auto steps = pipeline_schedule(r, 2, 5, 2, 3);
    const auto fwd = passes(steps, F), bwd = passes(steps, B);
    ASSERT_EQ(fwd.size(), 10u);
    ASSERT_EQ(bwd.size(), 10u);
    for (std::size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(fwd[k], (ScheduleStep{F, microbatch[k], chunk[k]})) << "forward " << k;
      EXPECT_EQ(bwd[k], (ScheduleStep{B, microbatch[k], 1 - chunk[k]})) << "backward " << k;
    }
  }
  // Warm-up 2·(pp - rank - 1) + (v - 1)·N.
  EXPECT_EQ(num_warmup_steps(0, 2, 5, 2, 3), 5);
  EXPECT_EQ(num_warmup_steps(1, 2, 5, 2, 3), 3);
}

TEST(GroupedSchedule, EveryChunkOfEveryMicrobatchOnceForwardThenBackward) {
  for (const GroupCase& c : kGroupCases) {
    for (std::int64_t r = 0; r < c.pp; ++r) {
      const auto steps = pipeline_schedule(r, c.pp, c.m, c.v, c.n);
      ASSERT_EQ(steps.size(), static_cast<std::size_t>(2 * c.m * c.v));
      std::set<std::tuple<int, int, int>> seen;
      for (const ScheduleStep& s : steps) {
        ASSERT_TRUE(s.microbatch >= 0 && s.microbatch < c.m && s.chunk >= 0 && s.chunk < c.v);
        if (s.pass == B) {
          EXPECT_TRUE(seen.count({0, s.microbatch, s.chunk})) << "backward before its forward";
        }
        EXPECT_TRUE(seen.insert({s.pass == F ? 0 : 1, s.microbatch, s.chunk}).second) << "step repeated";
      }
      EXPECT_EQ(num_warmup_steps(r, c.pp, c.m, c.v, c.n), std::min(2 * (c.pp - r - 1) + (c.v - 1) * c.n, c.m * c.v));
    }
  }
}

// N = pp is the 2023 schedule, except that with m == pp the 2023 one runs every forward first and
// today's only where its warm-up count reaches m·v (rank 0, not the last rank).
TEST(GroupedSchedule, GroupOfPpIsThe2023ScheduleUnlessMEqualsPp) {
  for (const auto& [pp, m, v] : std::vector<std::tuple<int, int, int>>{{2, 4, 2}, {4, 8, 3}, {8, 16, 6}, {3, 9, 4}}) {
    for (std::int64_t r = 0; r < pp; ++r) EXPECT_EQ(pipeline_schedule(r, pp, m, v, pp), pipeline_schedule(r, pp, m, v));
  }
  EXPECT_EQ(num_warmup_steps(3, 4, 4, 2, 0), 8);
  EXPECT_EQ(num_warmup_steps(3, 4, 4, 2, 4), 4);  // (v - 1)·N
  EXPECT_EQ(num_warmup_steps(0, 4, 4, 2, 4), 8);  // 2·3 + 4 = 10, capped at m·v
}

// With free communication and N a divisor of m, the group schedule keeps the interleaved bubble
// (pp-1)/(v·m) of the ideal m·(t_f + t_b): every group of N >= pp micro-batches keeps the first
// rank busy while the pipeline fills (Narayanan et al. SC'21 §2.2.2).
TEST(GroupedSchedule, IdealBubbleOfDividingGroups) {
  const double tf = 1.0;
  for (const double tb : {1.0, 2.0}) {
    for (const GroupCase& c : kGroupCases) {
      if (c.m % c.n != 0) continue;
      const double ideal = static_cast<double>(c.m) * (tf + tb);
      const double expected = ideal * (1.0 + static_cast<double>(c.pp - 1) / static_cast<double>(c.v * c.m));
      const double vd = static_cast<double>(c.v);
      EXPECT_NEAR(simulate_schedule_ideal(c.pp, c.m, c.v, tf / vd, tb / vd, c.n), expected, 1e-9 * expected)
          << "pp=" << c.pp << " m=" << c.m << " v=" << c.v << " N=" << c.n << " tb=" << tb;
    }
  }
}

// The closed search of PipelineOrder::peak_held against walking every step, for random chunk
// weights (zero included: an embedding-only chunk) over 1F1B, the 2023 and the grouped schedules.
TEST(GroupedSchedule, PeakHeldEqualsTheWalk) {
  std::mt19937_64 rng(7);
  std::vector<GroupCase> cases = kGroupCases;
  for (const GroupCase& c : std::vector<GroupCase>{{4, 8, 1, 0},
                                                   {8, 3, 1, 0},
                                                   {4, 8, 2, 0},
                                                   {4, 4, 3, 0},
                                                   {8, 64, 6, 0},
                                                   {2, 40, 3, 16},
                                                   {4, 40, 2, 16},
                                                   {16, 64, 8, 16}}) {
    cases.push_back(c);
  }
  for (const GroupCase& c : cases) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<std::int64_t> weight(static_cast<std::size_t>(c.v));
      for (auto& w : weight) w = static_cast<std::int64_t>(rng() % 5);
      for (std::int64_t r = 0; r < c.pp; ++r) {
        const PipelineOrder order(r, c.pp, c.m, c.v, c.n);
        std::int64_t held = 0, peak = 0;
        for (std::int64_t i = 0; i < order.size(); ++i) {
          const ScheduleStep s = order[i];
          held += (s.pass == F ? 1 : -1) * weight[static_cast<std::size_t>(s.chunk)];
          peak = std::max(peak, held);
        }
        EXPECT_EQ(order.peak_held(weight), peak)
            << "pp=" << c.pp << " m=" << c.m << " v=" << c.v << " N=" << c.n << " rank=" << r;
      }
    }
  }
}

// The closed search needs no walk: 2^24 micro-batches through 64 chunks answer at once, and a rank
// of a schedule whose groups repeat holds what its first groups hold.
TEST(GroupedSchedule, PeakHeldOfAHugeScheduleIsThePeriodicOne) {
  const std::vector<std::int64_t> weight = {0, 1, 1, 1, 1, 1, 1, 1};
  const std::int64_t small = PipelineOrder(1, 16, 64, 8, 16).peak_held(weight);
  EXPECT_EQ(PipelineOrder(1, 16, std::int64_t{1} << 24, 8, 16).peak_held(weight), small);
  // Uniform weights on the 2023 schedule: the warm-up 2(pp - 1) + (v - 1) pp plus one forward.
  EXPECT_EQ(PipelineOrder(0, 2, std::int64_t{1} << 24, 64, 0).peak_held(std::vector<std::int64_t>(64, 1)),
            2 * (2 - 1) + 63 * 2 + 1);
}

void expect_group_error(std::int64_t pp, std::int64_t m, std::int64_t v, std::int64_t n, const std::string& key) {
  try {
    (void)pipeline_schedule(0, pp, m, v, n);
    ADD_FAILURE() << "no error for pp=" << pp << " m=" << m << " v=" << v << " N=" << n;
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key);
  }
}

TEST(GroupedSchedule, InvalidGroupsNameTheKey) {
  const std::string key = "plan.microbatch_group_size_per_vp_stage";
  expect_group_error(4, 8, 2, 3, key);   // below pp
  expect_group_error(4, 8, 2, 9, key);   // above m
  expect_group_error(4, 10, 2, 8, key);  // last group of 2 < pp: dependency bubbles
  expect_group_error(4, 8, 2, -1, key);
  // A group size lifts the 2023 rule that m be a multiple of pp.
  EXPECT_NO_THROW((void)pipeline_schedule(0, 4, 6, 2, 6));
  // 1F1B ignores it, as Megatron does.
  EXPECT_NO_THROW((void)pipeline_schedule(0, 4, 6, 1, 3));
}

}  // namespace
}  // namespace megasim::models
