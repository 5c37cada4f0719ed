#include "models/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/error.h"

namespace megasim::models {
namespace {

constexpr PassKind F = PassKind::kForward;
constexpr PassKind B = PassKind::kBackward;

struct Case {
  std::int64_t pp, m, v;
};
// Shapes the interleaved schedule accepts (m a multiple of pp), plus plain 1F1B with m < pp.
const std::vector<Case> kCases = {{1, 1, 1}, {1, 5, 1},  {2, 1, 1}, {4, 2, 1}, {4, 4, 1}, {4, 8, 1},
                                  {8, 3, 1}, {8, 64, 1}, {2, 2, 2}, {2, 4, 2}, {4, 4, 2}, {4, 8, 3},
                                  {3, 9, 4}, {8, 16, 6}, {8, 8, 6}, {5, 15, 2}};

TEST(PipelineSchedule, EveryChunkOfEveryMicrobatchOnceForwardThenBackward) {
  for (const Case& c : kCases) {
    for (std::int64_t r = 0; r < c.pp; ++r) {
      const auto steps = pipeline_schedule(r, c.pp, c.m, c.v);
      ASSERT_EQ(steps.size(), static_cast<std::size_t>(2 * c.m * c.v));
      std::set<std::tuple<int, int, int>> seen;
      for (const ScheduleStep& s : steps) {
        ASSERT_GE(s.microbatch, 0);
        ASSERT_LT(s.microbatch, c.m);
        ASSERT_GE(s.chunk, 0);
        ASSERT_LT(s.chunk, c.v);
        if (s.pass == B) {
          EXPECT_TRUE(seen.count({0, s.microbatch, s.chunk})) << "backward before its forward";
        }
        EXPECT_TRUE(seen.insert({s.pass == F ? 0 : 1, s.microbatch, s.chunk}).second) << "step repeated";
      }
    }
  }
}

// Megatron's forward_backward_pipelining_without_interleaving with pp=4, m=8: rank r runs
// pp-r-1 warm-up forwards, then pairs (forward warmup+i, backward i), then the remaining backwards.
TEST(PipelineSchedule, OneFOneBRankZeroAndLastRank) {
  const std::vector<ScheduleStep> rank0 = {{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {F, 3, 0}, {B, 0, 0}, {F, 4, 0},
                                           {B, 1, 0}, {F, 5, 0}, {B, 2, 0}, {F, 6, 0}, {B, 3, 0}, {F, 7, 0},
                                           {B, 4, 0}, {B, 5, 0}, {B, 6, 0}, {B, 7, 0}};
  EXPECT_EQ(pipeline_schedule(0, 4, 8, 1), rank0);
  std::vector<ScheduleStep> rank3;
  for (int i = 0; i < 8; ++i) {
    rank3.push_back({F, i, 0});
    rank3.push_back({B, i, 0});
  }
  EXPECT_EQ(pipeline_schedule(3, 4, 8, 1), rank3);
}

// Interleaved, pp=2, v=2, m=4. Forward k uses chunk (k mod 4) div 2 and micro-batch
// (k div 4)·2 + k mod 2; backward k the reversed chunk. Warm-up: rank 0 2·1 + 1·2 = 4, rank 1 0 + 2 = 2.
TEST(PipelineSchedule, InterleavedTwoRanksTwoChunksFourMicrobatches) {
  const std::vector<ScheduleStep> rank0 = {{F, 0, 0}, {F, 1, 0}, {F, 0, 1}, {F, 1, 1}, {F, 2, 0}, {B, 0, 1},
                                           {F, 3, 0}, {B, 1, 1}, {F, 2, 1}, {B, 0, 0}, {F, 3, 1}, {B, 1, 0},
                                           {B, 2, 1}, {B, 3, 1}, {B, 2, 0}, {B, 3, 0}};
  const std::vector<ScheduleStep> rank1 = {{F, 0, 0}, {F, 1, 0}, {F, 0, 1}, {B, 0, 1}, {F, 1, 1}, {B, 1, 1},
                                           {F, 2, 0}, {B, 0, 0}, {F, 3, 0}, {B, 1, 0}, {F, 2, 1}, {B, 2, 1},
                                           {F, 3, 1}, {B, 3, 1}, {B, 2, 0}, {B, 3, 0}};
  EXPECT_EQ(pipeline_schedule(0, 2, 4, 2), rank0);
  EXPECT_EQ(pipeline_schedule(1, 2, 4, 2), rank1);
}

// With m == pp Megatron's interleaved schedule runs every forward and then every backward.
TEST(PipelineSchedule, InterleavedWithMicrobatchesEqualToStagesIsAllWarmup) {
  const std::vector<ScheduleStep> expected = {{F, 0, 0}, {F, 1, 0}, {F, 0, 1}, {F, 1, 1},
                                              {B, 0, 1}, {B, 1, 1}, {B, 0, 0}, {B, 1, 0}};
  for (std::int64_t r = 0; r < 2; ++r) EXPECT_EQ(pipeline_schedule(r, 2, 2, 2), expected);
}

TEST(PipelineSchedule, WarmupCounts) {
  EXPECT_EQ(num_warmup_steps(0, 4, 8, 1), 3);
  EXPECT_EQ(num_warmup_steps(3, 4, 8, 1), 0);
  EXPECT_EQ(num_warmup_steps(0, 8, 3, 1), 3);      // capped at m
  EXPECT_EQ(num_warmup_steps(0, 8, 16, 6), 54);    // 2·7 + 5·8
  EXPECT_EQ(num_warmup_steps(7, 8, 16, 6), 40);    // 0 + 5·8
  EXPECT_EQ(num_warmup_steps(0, 4, 4, 2), 8);      // m == pp: all m·v steps
  EXPECT_EQ(num_warmup_steps(0, 4, 8, 3), 14);     // 2·3 + 2·4
  EXPECT_EQ(num_warmup_steps(0, 35, 70, 3), 138);  // 2·34 + 2·35, below m·v = 210
}

TEST(PipelineSchedule, VirtualStageMapping) {
  // 96 layers, pp 8, v 6: 2 layers per virtual stage; chunk 1 of rank 0 is stage 8 (layers 16-17).
  EXPECT_EQ(virtual_stage_of(0, 1, 8), 8);
  EXPECT_EQ(first_layer_of_chunk(0, 1, 8, 2), 16);
  EXPECT_EQ(first_layer_of_chunk(7, 5, 8, 2), 94);
  for (std::int64_t k = 0; k < 48; ++k) {
    EXPECT_EQ(virtual_stage_of(pp_rank_of_virtual_stage(k, 8), chunk_of_virtual_stage(k, 8), 8), k);
  }
}

// 1F1B with free communication: the last rank starts after (pp-1) forwards, then alternates m
// forwards and backwards without waiting, and the last backward walks back over pp-1 stages:
// (pp-1)·t_f + m·(t_f + t_b) + (pp-1)·t_b = (m + pp - 1)·(t_f + t_b); the bubble is (pp-1)/m of the
// ideal m·(t_f + t_b).
TEST(PipelineSchedule, OneFOneBIdealMakespan) {
  const double tf = 1.0;
  const double tb = 2.0;
  for (const Case& c : kCases) {
    if (c.v != 1) continue;
    const double expected = static_cast<double>(c.m + c.pp - 1) * (tf + tb);
    EXPECT_DOUBLE_EQ(simulate_schedule_ideal(c.pp, c.m, 1, tf, tb), expected) << c.pp << " " << c.m;
  }
}

// Interleaved with per-chunk times t/v: the bubble is (pp-1)/(v·m) of the ideal m·(t_f + t_b), i.e.
// makespan m·(t_f+t_b)·(1 + (pp-1)/(v·m)) (Narayanan et al. SC'21 §2.2.2). Megatron's order reaches
// it exactly, including m == pp (all warm-up) and for any t_b/t_f.
TEST(PipelineSchedule, InterleavedIdealBubble) {
  const std::vector<Case> cases = {{2, 4, 2},  {4, 8, 2},  {4, 16, 2}, {4, 8, 3},  {4, 8, 4},  {8, 16, 6},
                                   {8, 32, 6}, {3, 9, 4},  {8, 24, 2}, {5, 15, 3}, {4, 4, 2},  {8, 8, 6},
                                   {2, 2, 5},  {7, 14, 3}, {6, 36, 4}, {8, 64, 6}, {12, 24, 2}};
  const double tf = 1.0;
  for (double tb : {1.0, 2.0, 3.0}) {
    for (const Case& c : cases) {
      const double ideal = static_cast<double>(c.m) * (tf + tb);
      const double expected = ideal * (1.0 + static_cast<double>(c.pp - 1) / static_cast<double>(c.v * c.m));
      const double vd = static_cast<double>(c.v);
      EXPECT_NEAR(simulate_schedule_ideal(c.pp, c.m, c.v, tf / vd, tb / vd), expected, 1e-9 * expected)
          << "pp=" << c.pp << " m=" << c.m << " v=" << c.v << " tb=" << tb;
    }
  }
}

TEST(PipelineSchedule, InFlightMicrobatchesOneFOneB) {
  for (const Case& c : kCases) {
    if (c.v != 1) continue;
    for (std::int64_t r = 0; r < c.pp; ++r) {
      EXPECT_EQ(max_in_flight_microbatches(r, c.pp, c.m, 1), std::min(c.pp - r, c.m));
    }
  }
}

// Interleaved: the warm-up forwards plus the forward that opens the steady state. On rank 0 that is
// 2(pp-1) + (v-1)pp + 1 chunks of 1/v of the rank's layers, i.e. pp·(1 + (pp-1)/(pp·v)) stages' worth
// of micro-batches: the interleaving memory factor of Korthikanti et al. 2022, §4.2.3.
TEST(PipelineSchedule, InFlightMicrobatchesInterleaved) {
  EXPECT_EQ(max_in_flight_microbatches(0, 8, 16, 6), 8 * 6 + 8 - 1);
  EXPECT_EQ(max_in_flight_microbatches(7, 8, 16, 6), 5 * 8 + 1);
  EXPECT_EQ(max_in_flight_microbatches(0, 4, 4, 2), 8);  // all warm-up: every chunk of every micro-batch
  for (const Case& c : kCases) {
    if (c.v == 1) continue;
    for (std::int64_t r = 0; r < c.pp; ++r) {
      const std::int64_t warmup = num_warmup_steps(r, c.pp, c.m, c.v);
      EXPECT_EQ(max_in_flight_microbatches(r, c.pp, c.m, c.v), std::min(warmup + 1, c.m * c.v));
    }
  }
}

void expect_config_error(std::int64_t pp, std::int64_t m, std::int64_t v, const std::string& key) {
  try {
    (void)pipeline_schedule(0, pp, m, v);
    ADD_FAILURE() << "no error for pp=" << pp << " m=" << m << " v=" << v;
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key);
  }
}

TEST(PipelineSchedule, InvalidArgumentsNameTheKey) {
  expect_config_error(0, 4, 1, "plan.pipeline_model_parallel_size");
  expect_config_error(4, 0, 1, "plan.num_microbatches");
  expect_config_error(4, 6, 2, "plan.num_microbatches");  // interleaved needs m % pp == 0
  expect_config_error(4, 4, 0, "plan.virtual_pipeline_model_parallel_size");
  expect_config_error(1, 4, 2, "plan.virtual_pipeline_model_parallel_size");
  EXPECT_THROW((void)simulate_schedule_ideal(4, 6, 2, 1.0, 2.0), sim::ConfigError);
  EXPECT_THROW((void)max_in_flight_microbatches(0, 4, -1, 1), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::models
