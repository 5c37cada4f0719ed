// The replay of a trace (trace_replay.h): a simulated trace replayed with its own compute durations
// is reproduced task for task, in both unit layouts; a hand-made schedule gives the time derived on
// paper; slower compute never makes the iteration shorter.
#include "scenarios/trace/trace_replay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "tests/scenarios/iteration_test_util.h"

namespace megasim::scenarios {
namespace {

using testing::per_rank;

using models::TaskCategory;
using models::TaskKind;
using testing::ms;
using testing::Rec;

Scenario small_scenario(int tp, int pp, int vpp_layers, bool overlap) {
  const std::string flag = overlap ? "true" : "false";
  Scenario s = load_scenario_text(std::string(testing::kSmallGptOnOneServer) + R"(
[plan]
micro_batch_size = 1
global_batch_size = 16
use_distributed_optimizer = true
)");
  apply_override(s, "plan.tensor_model_parallel_size=" + std::to_string(tp));
  apply_override(s, "plan.pipeline_model_parallel_size=" + std::to_string(pp));
  apply_override(s, "plan.num_layers_per_virtual_pipeline_stage=" + std::to_string(vpp_layers));
  for (const char* key : {"overlap_grad_reduce", "overlap_param_gather", "overlap_p2p_comm", "tp_comm_overlap"}) {
    apply_override(s, std::string("plan.") + key + "=" + flag);
  }
  return s;
}

void expect_same_records(const backend::Trace& a, const backend::Trace& b) {
  ASSERT_EQ(a.units.size(), b.units.size());
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    for (std::size_t i = 0; i < a.units[u].records.size(); ++i) {
      const backend::TaskRecord& x = a.units[u].records[i];
      const backend::TaskRecord& y = b.units[u].records[i];
      ASSERT_EQ(x.start, y.start) << "unit " << u << " task " << i;
      ASSERT_EQ(x.transfer_start, y.transfer_start) << "unit " << u << " task " << i;
      ASSERT_EQ(x.end, y.end) << "unit " << u << " task " << i;
    }
  }
}

struct Plan {
  int tp, pp, vpp_layers;
  bool jitter;
};

TEST(TraceReplay, ReproducesSimulatedTracesInBothLayouts) {
  for (const Plan plan : {Plan{1, 1, 0, false}, Plan{1, 2, 0, false}, Plan{1, 2, 1, false}, Plan{2, 2, 0, false},
                          Plan{2, 2, 0, true}, Plan{1, 2, 1, true}}) {
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "tp " << plan.tp << " pp " << plan.pp << " vpp layers " << plan.vpp_layers
                                        << " jitter " << plan.jitter << " overlap " << overlap);
      Scenario s = small_scenario(plan.tp, plan.pp, plan.vpp_layers, overlap);
      if (plan.jitter) apply_override(s, "stragglers.jitter_cv=0.1");
      const RunResult run = run_iteration_study(s);
      ASSERT_EQ(run.workload.plan.tp, plan.tp);
      ASSERT_EQ(run.workload.stages.size(), static_cast<std::size_t>(plan.pp));
      ASSERT_EQ(run.workload.plan.virtual_stages, plan.vpp_layers > 0 ? 2 : 1);
      const backend::Trace replayed = replay_trace(run.workload, run.trace, compute_durations(run.workload, run.trace));
      EXPECT_EQ(replayed.iteration_time, run.trace.iteration_time);
      expect_same_records(replayed, run.trace);
      const backend::Trace ranks = per_rank(run.trace);
      const backend::Trace replayed_ranks = replay_trace(run.workload, ranks, compute_durations(run.workload, ranks));
      EXPECT_EQ(replayed_ranks.iteration_time, run.trace.iteration_time);
      expect_same_records(replayed_ranks, ranks);
    }
  }
}

TEST(TraceReplay, SlowerComputeOfOneUnitNeverShortensTheIteration) {
  const RunResult run = run_iteration_study(small_scenario(2, 2, 0, false));
  sim::SimTime previous = 0;
  for (const double x : {1.0, 1.05, 1.2, 1.5, 2.0}) {
    ComputeDurations d = compute_durations(run.workload, run.trace);
    for (sim::SimTime& t : d[1]) t = static_cast<sim::SimTime>(static_cast<double>(t) * x);
    const sim::SimTime time = replay_trace(run.workload, run.trace, d).iteration_time;
    EXPECT_GE(time, previous) << x;
    if (x == 2.0) {
      EXPECT_GT(time, run.trace.iteration_time);
    }
    previous = time;
  }
}

// One TraceReplay replays a trace with several sets of durations, each as a fresh replay_trace does:
// the graph built once does not keep anything of a previous replay.
TEST(TraceReplay, AReplayBuiltOnceGivesEachReplayAsAFreshOne) {
  Scenario s = small_scenario(2, 2, 1, true);
  apply_override(s, "stragglers.jitter_cv=0.1");
  const RunResult run = run_iteration_study(s);
  const TraceReplay replay(run.workload, run.trace);
  for (const double x : {2.0, 1.0, 0.5, 1.3, 1.0}) {
    ComputeDurations d = compute_durations(run.workload, run.trace);
    for (sim::SimTime& t : d[0]) t = static_cast<sim::SimTime>(static_cast<double>(t) * x);
    const backend::Trace fresh = replay_trace(run.workload, run.trace, d);
    EXPECT_EQ(replay.iteration_time(d), fresh.iteration_time) << x;
    expect_same_records(replay.replay(d), fresh);
    if (x == 1.0) {
      EXPECT_EQ(replay.iteration_time(d), run.trace.iteration_time);
    }
  }
  ComputeDurations negative = compute_durations(run.workload, run.trace);
  const auto& tasks = run.workload.stages[static_cast<std::size_t>(run.trace.units.back().stage)].tasks;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].kind == TaskKind::kCompute) negative.back()[i] = -1;
  }
  EXPECT_THROW(static_cast<void>(replay.iteration_time(negative)), sim::ConfigError);
  EXPECT_THROW(static_cast<void>(replay.iteration_time({})), sim::ConfigError);
}

// Two stages, one micro-batch: stage 0 runs F (2 ms), sends it, receives the gradient and runs B
// (5 ms); stage 1 receives, runs F (3 ms) and B (4 ms) and sends the gradient back; transfers last
// 1 ms. F0 [0, 2], transfer [2, 3], F1 [3, 6], B1 [6, 10], transfer [10, 11], B0 [11, 16]. The
// recorded times are deliberately different (a slower run): only compute durations and transfer
// lengths are kept.
TEST(TraceReplay, HandMadePipelineGivesTheDerivedTime) {
  const models::Workload w = testing::two_stage_pipeline();
  const backend::Trace t = testing::trace({testing::unit(0, 0, {0}, {{0, 2}, {3, 5, 4}, {3, 13, 12}, {13, 18}}),
                                           testing::unit(1, 0, {1}, {{0, 5, 4}, {5, 8}, {8, 12}, {12, 13, 12.5}})},
                                          18);
  const ComputeDurations d = compute_durations(w, t);
  const backend::Trace r = replay_trace(w, t, d);
  EXPECT_EQ(r.iteration_time, ms(16));
  EXPECT_EQ(r.units[1].records[0].transfer_start, ms(2));
  EXPECT_EQ(r.units[1].records[1].start, ms(3));
  EXPECT_EQ(r.units[0].records[2].start, ms(2));  // posted behind the send, without waiting for it
  EXPECT_EQ(r.units[0].records[3].start, ms(11));
}

// One stage, two replicas: compute (4 and 6 ms), a gradient all-reduce (2 ms, begins when both
// issued it), the optimizer (1 ms): 6 + 2 + 1 = 9 ms. Replica 0 at 7 ms of compute: 10 ms.
TEST(TraceReplay, DataParallelCallWaitsForEveryReplica) {
  using testing::compute;
  models::StageProgram s;
  s.tasks = {compute(TaskCategory::kBackward, 0), testing::dp_call(models::CollectiveOp::kAllReduce, {0}),
             compute(TaskCategory::kOptimizer, -1, {1})};
  const models::Workload w = testing::workload(1, 1, 2, 1, {s});
  const backend::Trace t = testing::trace(
      {testing::unit(0, 0, {0}, {{0, 4}, {4, 8, 6}, {8, 9}}), testing::unit(0, 1, {1}, {{0, 6}, {6, 8, 6}, {8, 9}})},
      9);
  ComputeDurations d = compute_durations(w, t);
  EXPECT_EQ(replay_trace(w, t, d).iteration_time, ms(9));
  // As a real backend records it (transfer_start = its own issue, measured_trace.h): replica 0's
  // wait for replica 1 is not transfer time.
  const backend::Trace measured = testing::trace(
      {testing::unit(0, 0, {0}, {{0, 4}, {4, 8}, {8, 9}}), testing::unit(0, 1, {1}, {{0, 6}, {6, 8}, {8, 9}})}, 9);
  EXPECT_EQ(replay_trace(w, measured, d).iteration_time, ms(9));
  d[0][0] = ms(7);
  const backend::Trace r = replay_trace(w, t, d);
  EXPECT_EQ(r.iteration_time, ms(10));
  EXPECT_EQ(r.units[1].records[1].start, ms(6));
  EXPECT_EQ(r.units[1].records[1].transfer_start, ms(7));
}

TEST(TraceReplay, IncompleteTracesAreRejected) {
  models::StageProgram s;
  s.tasks = {testing::compute(TaskCategory::kBackward, 0)};
  const models::Workload w = testing::workload(1, 1, 2, 1, {s});
  const backend::Trace t = testing::trace({testing::unit(0, 0, {0}, {{0, 4}})}, 4);
  EXPECT_THROW(replay_trace(w, t, compute_durations(w, t)), sim::ConfigError);
  const backend::Trace twice =
      testing::trace({testing::unit(0, 0, {0}, {{0, 4}}), testing::unit(0, 1, {0}, {{0, 4}})}, 4);
  EXPECT_THROW(replay_trace(w, twice, compute_durations(w, twice)), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::scenarios
