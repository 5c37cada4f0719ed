// Replicas alike but for speed (backend/sim/replica_speeds.cc): a unit runs at its slowest GPU's
// slowdown, so replicas whose units are as slow stage by stage are identical, and replica 0 alone
// gives the full iteration exactly where no ECMP choice tells them apart; the slowest replica's
// speeds for every replica (the sweep's screen under slow hosts) pick the replica by its largest
// unit slowdown, then its sum, and bound the iteration with the replicas' own speeds from below.
#include <gtest/gtest.h>

#include "backend/sim/iteration_executor.h"
#include "iteration_executor_test_util.h"

namespace megasim::backend {
namespace {

using testing::empty_workload;
using testing::first_gpus;
using testing::make_inputs;

constexpr sim::SimTime kMs = 1'000'000;

// TP 8 x PP 4 x DP 4 on 128 GPUs of one ToR group each stage (no ECMP choice): rank (replica + 4 x
// stage) x 8 + t on GPU of the same number.
struct Case {
  topo::Topology topo = topo::Topology::build(topo::ClusterParams{.gpus = 128});
  models::Workload w = [] {
    models::Workload out = empty_workload(8, 4, 4, 2, 8);
    testing::add_pipeline_programs(out,
                                   testing::PipelineOptions{.pp_bytes = 4e6, .dp_buckets = 4, .dp_bucket_bytes = 50e6});
    return out;
  }();
  IterationInputs inputs() const {
    IterationInputs in = make_inputs(w, topo, first_gpus(128), {{1 * kMs, 0.8 * kMs}, {2 * kMs, 1.6 * kMs}});
    in.gpu_slowdown.assign(128, 1.0);
    return in;
  }
};

std::size_t gpu_of(std::size_t stage, std::size_t replica, std::size_t t) {
  return (replica + 4 * stage) * 8 + t;
}

TEST(ReplicaSpeeds, ReplicasAsSlowStageByStageAreIdenticalAndOneStandsForAll) {
  const Case c;
  IterationInputs in = c.inputs();
  // Stage 1 slowed in every replica, through a different GPU of each unit.
  for (std::size_t r = 0; r < 4; ++r) in.gpu_slowdown[gpu_of(1, r, r)] = 1.3;
  ASSERT_TRUE(replicas_identical(in));
  const Trace full = simulate_iteration(in);
  in.one_replica = true;
  const Trace one = simulate_iteration(in);
  EXPECT_EQ(one.iteration_time, full.iteration_time);
  const Trace healthy = simulate_iteration(c.inputs());
  EXPECT_GT(full.iteration_time, healthy.iteration_time);  // the slowdown counts
  // One replica slower at stage 1 than the others: no longer identical, but alike but for speed.
  in.one_replica = false;
  in.gpu_slowdown[gpu_of(1, 2, 0)] = 1.4;
  EXPECT_FALSE(replicas_identical(in));
  EXPECT_TRUE(replicas_alike_but_for_speed(in));
  IterationInputs jitter = in;
  jitter.task_scale.assign(16, {});
  EXPECT_FALSE(replicas_alike_but_for_speed(jitter));
}

TEST(ReplicaSpeeds, TheSlowestReplicaIsChosenByItsLargestThenItsSummedSlowdown) {
  const Case c;
  IterationInputs in = c.inputs();
  IterationInputs none = in;
  none.gpu_slowdown.clear();
  EXPECT_TRUE(slowest_replica_slowdowns(none).empty());
  in.gpu_slowdown[gpu_of(0, 1, 3)] = 1.2;  // replica 1: stage 0 at 1.2
  in.gpu_slowdown[gpu_of(0, 3, 0)] = 1.2;  // replica 3: stages 0 and 2 at 1.2
  in.gpu_slowdown[gpu_of(2, 3, 7)] = 1.2;
  std::vector<double> out = slowest_replica_slowdowns(in);
  ASSERT_EQ(out.size(), 128u);
  for (std::size_t s = 0; s < 4; ++s) {
    for (std::size_t r = 0; r < 4; ++r) {
      for (std::size_t t = 0; t < 8; ++t) EXPECT_EQ(out[gpu_of(s, r, t)], s == 0 || s == 2 ? 1.2 : 1.0) << s << r << t;
    }
  }
  // A larger slowdown at one stage outranks the sum: replica 0 at 1.5 on stage 3.
  in.gpu_slowdown[gpu_of(3, 0, 5)] = 1.5;
  out = slowest_replica_slowdowns(in);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(out[gpu_of(3, r, 0)], 1.5);
    EXPECT_EQ(out[gpu_of(0, r, 0)], 1.0);
    EXPECT_EQ(out[gpu_of(2, r, 0)], 1.0);
  }
  in.gpu_slowdown = out;
  EXPECT_TRUE(replicas_identical(in));
}

// Every replica at the slowest one's speeds runs that replica's pipeline in step: the iteration is
// no longer than with the replicas' own speeds, where every DP collective waits for it; here, with
// no fabric choice to tell them apart, it is exactly as long.
TEST(ReplicaSpeeds, TheSlowestReplicasSpeedsBoundTheIterationFromBelow) {
  const Case c;
  IterationInputs own = c.inputs();
  own.gpu_slowdown[gpu_of(1, 2, 4)] = 1.3;
  own.gpu_slowdown[gpu_of(3, 0, 1)] = 1.1;
  const Trace full = simulate_iteration(own);
  IterationInputs screen = own;
  screen.gpu_slowdown = slowest_replica_slowdowns(own);
  screen.one_replica = true;
  const Trace one = simulate_iteration(screen);
  EXPECT_LE(one.iteration_time, full.iteration_time);
  EXPECT_EQ(one.iteration_time, full.iteration_time);
  screen.one_replica = false;
  EXPECT_EQ(simulate_iteration(screen).iteration_time, one.iteration_time);
}

}  // namespace
}  // namespace megasim::backend
