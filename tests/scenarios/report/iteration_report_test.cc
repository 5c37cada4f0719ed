#include "scenarios/report/iteration_report.h"

#include <gtest/gtest.h>

#include <random>

#include "models/flops.h"
#include "tests/scenarios/iteration_test_util.h"

namespace megasim::scenarios {
namespace {

using models::CollectiveOp;
using models::TaskCategory;
using models::TaskKind;
using testing::balanced_json;
using testing::compute;
using testing::dp_call;
using testing::p2p;
using testing::Rec;

constexpr auto kF = TaskCategory::kForward;
constexpr auto kB = TaskCategory::kBackward;
constexpr auto kFwd = TaskCategory::kPipelineForward;
constexpr auto kBwd = TaskCategory::kPipelineBackward;
constexpr double kTol = 1e-12;  // seconds

void expect_breakdown(const RankBreakdown& b, double compute_ms, double tp_ms, double pp_ms, double dp_ms,
                      double bubble_ms, double waiting_ms, double total_ms) {
  EXPECT_NEAR(b.compute_s, compute_ms / 1e3, kTol);
  EXPECT_NEAR(b.tp_exposed_s, tp_ms / 1e3, kTol);
  EXPECT_NEAR(b.pp_exposed_s, pp_ms / 1e3, kTol);
  EXPECT_NEAR(b.dp_exposed_s, dp_ms / 1e3, kTol);
  EXPECT_NEAR(b.bubble_s, bubble_ms / 1e3, kTol);
  EXPECT_NEAR(b.waiting_s, waiting_ms / 1e3, kTol);
  EXPECT_NEAR(b.total_s, total_ms / 1e3, kTol);
}

// 1F1B on p = 2 stages with m = 2 micro-batches, t_f = 1 ms, t_b = 2 ms and free communication:
//   stage 0: F0 [0,1) F1 [1,2) .. B0 [4,6) .. B1 [7,9)
//   stage 1: .. F0 [1,2) B0 [2,4) F1 [4,5) B1 [5,7) ..
// Each stage idles (p-1)(t_f + t_b) = 3 ms waiting for the other stage, exactly the schedule's share
// (p-1)/m = 1/2 of the ideal m(t_f + t_b) = 6 ms: all bubble.
struct Pipeline {
  models::Workload workload;
  backend::Trace trace;
};

Pipeline one_f_one_b() {
  models::StageProgram s0{{compute(kF, 0), p2p(TaskKind::kPpSend, kFwd, 0, +1, 0, {0}), compute(kF, 1),
                           p2p(TaskKind::kPpSend, kFwd, 1, +1, 1, {2}), p2p(TaskKind::kPpRecv, kBwd, 0, +1, 100),
                           compute(kB, 0, {4}), p2p(TaskKind::kPpRecv, kBwd, 1, +1, 101), compute(kB, 1, {6})}};
  models::StageProgram s1{{p2p(TaskKind::kPpRecv, kFwd, 0, -1, 0), compute(kF, 0, {0}), compute(kB, 0),
                           p2p(TaskKind::kPpSend, kBwd, 0, -1, 100, {2}), p2p(TaskKind::kPpRecv, kFwd, 1, -1, 1),
                           compute(kF, 1, {4}), compute(kB, 1), p2p(TaskKind::kPpSend, kBwd, 1, -1, 101, {6})}};
  // Posting times: a recv is posted when the stage reaches it in program order; a transfer starts
  // when both sides are posted.
  backend::TraceUnit u0 =
      testing::unit(0, 0, {0}, {{0, 1}, {1, 1}, {1, 2}, {2, 2}, {2, 4, 4}, {4, 6}, {6, 7, 7}, {7, 9}});
  backend::TraceUnit u1 = testing::unit(1, 0, {1}, {{0, 1, 1}, {1, 2}, {2, 4}, {4, 4}, {4, 4}, {4, 5}, {5, 7}, {7, 7}});
  return {testing::workload(1, 2, 1, 2, {s0, s1}), testing::trace({u0, u1}, 9)};
}

TEST(IterationBreakdown, FreeCommunicationPipelineIdleIsAllBubble) {
  const Pipeline p = one_f_one_b();
  const std::vector<RankBreakdown> b = breakdown_by_unit(p.workload, p.trace);
  ASSERT_EQ(b.size(), 2u);
  // Stage 0: gap [2,4) before its first backward and [6,7) waiting for the last one.
  expect_breakdown(b[0], 6, 0, 0, 0, 2 + 1, 0, 9);
  // Stage 1: gap [0,1) before the first forward arrives; tail [7,9) while stage 0 drains.
  expect_breakdown(b[1], 6, 0, 0, 0, 1 + 2, 0, 9);
  const double m = 2, pp = 2, ideal_ms = m * (1 + 2);
  EXPECT_NEAR(b[0].bubble_s * 1e3 / ideal_ms, (pp - 1) / m, kTol);
}

// A forward recv: posted at 0, the peer sends at 3, the data arrives at 5, the forward starts at 6
// (1 ms of slack after the data arrived, blamed on nothing: waiting). Pipeline idle [0,3) = 3 ms,
// within the schedule's share (p-1)/(v*m) = 1/1 of the passes F + B = 3 ms: all bubble.
TEST(IterationBreakdown, RecvGapIsPipelineIdleThenPpExposed) {
  models::StageProgram s1{{p2p(TaskKind::kPpRecv, kFwd, 0, -1, 0), compute(kF, 0, {0}), compute(kB, 0)}};
  const auto w = testing::workload(1, 2, 1, 1, {models::StageProgram{}, s1});
  const auto t = testing::trace({testing::unit(1, 0, {1}, {{0, 5, 3}, {6, 7}, {7, 9}})}, 9);
  expect_breakdown(breakdown_by_unit(w, t)[0], 1 + 2, 0, 5 - 3, 0, 3, 1, 9);
}

// p = 2, m = 2: the schedule's share is (2-1)/(1*2) of the passes 1+2+1+2 = 6 ms, 3 ms. The
// forward activation of micro-batch 1 is posted for at 3 but sent only at 10 (a slow peer): of the
// 7 ms of pipeline idle, 3 are bubble and 4 waiting, plus 1 ms of slack after the data arrived.
TEST(IterationBreakdown, PipelineIdleBeyondTheSchedulesShareIsWaiting) {
  models::StageProgram s1{
      {compute(kF, 0), compute(kB, 0), p2p(TaskKind::kPpRecv, kFwd, 1, -1, 1), compute(kF, 1, {2}), compute(kB, 1)}};
  const auto w = testing::workload(1, 2, 1, 2, {models::StageProgram{}, s1});
  const auto t =
      testing::trace({testing::unit(1, 0, {1}, {{0, 1}, {1, 3}, {3, 10.5, 10}, {11.5, 12.5}, {12.5, 14.5}})}, 14.5);
  expect_breakdown(breakdown_by_unit(w, t)[0], 6, 0, 0.5, 0, 3, 4 + 1, 14.5);
}

// F1 depends on a recv that ended at 2.5 and on the send of F0 (no overlap_p2p_comm) that ended at
// 3: the send blocks. Its transfer began at 2 (the peer posted its recv late): [1,2) pipeline idle
// (within the share 1/2 of the passes 1+1 ms: bubble), [2,3) pp_exposed.
TEST(IterationBreakdown, BlockingSendIsPipelineIdleThenPpExposed) {
  models::StageProgram s0{{compute(kF, 0), p2p(TaskKind::kPpSend, kFwd, 0, +1, 0, {0}),
                           p2p(TaskKind::kPpRecv, kBwd, 9, +1, 9), compute(kF, 1, {1, 2})}};
  const auto w = testing::workload(1, 2, 1, 2, {s0, models::StageProgram{}});
  const auto t = testing::trace({testing::unit(0, 0, {0}, {{0, 1}, {1, 3, 2}, {0, 2.5, 0.5}, {3, 4}})}, 4);
  expect_breakdown(breakdown_by_unit(w, t)[0], 2, 0, 1, 0, 1, 0, 4);
}

// The optimizer waits for the second gradient bucket. Bucket 0 moves [1,3); bucket 1, issued at 2,
// starts moving at 4 (another replica issued it late), ends at 5. Gap [2,5): DP moving in [2,3) and
// [4,5) = 2 ms exposed, [3,4) waiting.
TEST(IterationBreakdown, DpGapCountsTheQueuedBucketsAsExposed) {
  models::StageProgram s0{{compute(kB, 0), dp_call(CollectiveOp::kReduceScatter),
                           dp_call(CollectiveOp::kReduceScatter, {0}), compute(TaskCategory::kOptimizer, -1, {2})}};
  const auto w = testing::workload(1, 1, 2, 1, {s0});
  const auto t = testing::trace({testing::unit(0, 0, {0}, {{0, 2}, {1, 3}, {2, 5, 4}, {5, 6}})}, 6);
  expect_breakdown(breakdown_by_unit(w, t)[0], 3, 0, 0, 2, 0, 1, 6);
}

// Megatron's send_forward_recv_backward: one batched call, so the send and the recv end together;
// either one blames [1,3) on the peer stage (pipeline idle; the share is 1/1 of the passes 1+2 ms,
// so all bubble) and [3,4) on the transfer (pp).
TEST(IterationBreakdown, BatchedSendRecvIsPipelineIdleThenPpExposed) {
  models::StageProgram s0{{compute(kF, 0), p2p(TaskKind::kPpSend, kFwd, 0, +1, 0, {0}),
                           p2p(TaskKind::kPpRecv, kBwd, 0, +1, 100, {0}), compute(kB, 0, {1, 2})}};
  const auto w = testing::workload(1, 2, 1, 1, {s0, models::StageProgram{}});
  const auto t = testing::trace({testing::unit(0, 0, {0}, {{0, 1}, {1, 4, 3}, {1, 4, 3}, {4, 6}})}, 6);
  expect_breakdown(breakdown_by_unit(w, t)[0], 3, 0, 1, 0, 2, 0, 6);
}

// The optimizer waits for the tied-embedding gradient exchange (a PP send, Megatron's embedding
// group), which is posted only after the reduce-scatter ends at 6. Gap [2,8): the send moves [7,8)
// (pp) after waiting [6,7) for its peer (pipeline idle, within the share 1/1 of the 2 ms backward:
// bubble); before it was posted, its own blocking dependency, the reduce-scatter, explains [2,6):
// issued at 2, moving [3,6) (dp), [2,3) waiting for a replica.
TEST(IterationBreakdown, PpTaskPostedLateIsBlamedOnItsOwnDependency) {
  models::StageProgram s0{{compute(kB, 0), dp_call(CollectiveOp::kReduceScatter, {0}),
                           p2p(TaskKind::kPpSend, TaskCategory::kGradientReduce, -1, -1, 1000, {1}),
                           compute(TaskCategory::kOptimizer, -1, {2})}};
  const auto w = testing::workload(1, 2, 2, 1, {s0, models::StageProgram{}});
  const auto t = testing::trace({testing::unit(0, 0, {0}, {{0, 2}, {2, 6, 3}, {6, 8, 7}, {8, 9}})}, 9);
  expect_breakdown(breakdown_by_unit(w, t)[0], 3, 0, 1, 3, 1, 1, 9);
}

// Tail after the last compute task, instant by instant. Stage 1 computes [0,2), a PP send moves
// [2.5,3.5), an all-gather moves [3,4), stage 0 of its replica computes until 5, the iteration ends
// at 7: pipeline idle [2,2.5) and [4,5) (1.5 ms, within the share 1/1 of the 2 ms backward:
// bubble), pp [2.5,3), dp [3,4) (DP wins the overlap), waiting [5,7).
TEST(IterationBreakdown, TailIsDpThenPpThenDrainThenWaiting) {
  models::StageProgram s0{{compute(kF, 0), dp_call(CollectiveOp::kAllGather, {0})}};
  models::StageProgram s1{
      {compute(kB, 0), dp_call(CollectiveOp::kAllGather, {0}), p2p(TaskKind::kPpSend, kBwd, 0, -1, 100, {0})}};
  const auto w = testing::workload(1, 2, 1, 1, {s0, s1});
  const auto t = testing::trace(
      {testing::unit(0, 0, {0}, {{0, 5}, {5, 7}}), testing::unit(1, 0, {1}, {{0, 2}, {2, 4, 3}, {2, 3.5, 2.5}})}, 7);
  const std::vector<RankBreakdown> b = breakdown_by_unit(w, t);
  expect_breakdown(b[0], 5, 0, 0, 2, 0, 0, 7);  // stage 1 finished before stage 0: no drain to wait for
  expect_breakdown(b[1], 2, 0, 0.5, 1, 0.5 + 1, 2, 7);
}

TEST(IterationBreakdown, TpExposedIsCarvedOutOfCompute) {
  const auto w = testing::workload(8, 1, 1, 1, {models::StageProgram{{compute(kF, 0)}}});
  const auto t = testing::trace({testing::unit(0, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {{0, 10, -1, 3}})}, 10);
  expect_breakdown(breakdown_by_unit(w, t)[0], 7, 3, 0, 0, 0, 0, 10);
}

// Idle time no communication explains: before the first task, and between two compute tasks.
TEST(IterationBreakdown, GapWithoutCommunicationIsWaiting) {
  const auto w = testing::workload(1, 1, 1, 2, {models::StageProgram{{compute(kF, 0), compute(kF, 1, {0})}}});
  const auto t = testing::trace({testing::unit(0, 0, {0}, {{1, 2}, {3, 4}})}, 4);
  expect_breakdown(breakdown_by_unit(w, t)[0], 2, 0, 0, 0, 0, 2, 4);
}

// Any trace, consistent or not: the categories are non-negative and sum to the iteration time.
TEST(IterationBreakdown, CategoriesPartitionTheIterationForEveryUnit) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<sim::SimTime> time(0, 1000);
  std::vector<models::StageProgram> stages(3);
  for (models::StageProgram& program : stages) {
    for (std::int32_t i = 0; i < 40; ++i) {
      std::vector<std::int32_t> deps;
      if (i > 0) deps = {static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(i))};
      switch (kind(rng)) {
        case 0:
          program.tasks.push_back(compute(i % 2 == 0 ? kF : kB, i, deps));
          break;
        case 1:
          program.tasks.push_back(p2p(TaskKind::kPpRecv, kFwd, i, 1, i, deps));
          break;
        case 2:
          program.tasks.push_back(p2p(TaskKind::kPpSend, kBwd, i, 1, i, deps));
          break;
        default:
          program.tasks.push_back(dp_call(CollectiveOp::kReduceScatter, deps));
      }
    }
  }
  const auto w = testing::workload(1, 3, 2, 4, stages);
  backend::Trace t = testing::trace({}, 0);
  t.iteration_time = 1000;
  for (std::int32_t u = 0; u < 6; ++u) {
    backend::TraceUnit unit = testing::unit(u % 3, u / 3, {u}, {});
    for (std::int32_t i = 0; i < 40; ++i) {
      sim::SimTime a = time(rng), b = time(rng), c = time(rng);
      if (a > b) std::swap(a, b);
      unit.records.push_back({a, std::clamp(c, a, b), b, time(rng) / 4});
    }
    t.units.push_back(unit);
  }
  for (const RankBreakdown& b : breakdown_by_unit(w, t)) {
    for (const double x : {b.compute_s, b.tp_exposed_s, b.pp_exposed_s, b.dp_exposed_s, b.bubble_s, b.waiting_s}) {
      EXPECT_GE(x, 0.0);
    }
    const double sum = b.compute_s + b.tp_exposed_s + b.pp_exposed_s + b.dp_exposed_s + b.bubble_s + b.waiting_s;
    EXPECT_NEAR(sum, 1e-6, 1e-18);
    EXPECT_NEAR(b.total_s, 1e-6, 1e-18);
  }
}

// The chain walked back from stage 0's last backward (derivation, step by step: the latest of deps
// and stream predecessor, or the peer that posted last when a transfer waited):
//   s0 B1 <- its recv (ended 7, later than B0 at 6) <- the peer send on s1 (posted 7 > 6)
//   <- s1 B1 <- s1 F1 <- its recv (ended 4, tie with B0: deps first) <- s1 send B0 (posted 4, pp
//   order) <- s1 B0 <- s1 F0 <- its recv (transfer at 1 > posted 0) <- s0 send F0 (posted 1) <- s0 F0.
TEST(CriticalPath, PipelineChainCrossesStagesThroughTheTransfers) {
  const Pipeline p = one_f_one_b();
  const std::vector<TaskRef> expected{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}, {1, 3},
                                      {1, 4}, {1, 5}, {1, 6}, {1, 7}, {0, 6}, {0, 7}};
  EXPECT_EQ(critical_chain(p.workload, p.trace), expected);
  const IterationReport r = summarize(p.workload, p.trace, models::find_gpu("A100"));
  ASSERT_EQ(r.critical_path.size(), 3u);
  EXPECT_EQ(r.critical_path[0], "stage 0 replica 0: F mb0 c0 .. pp send fwd mb0 c0 (2 tasks, 0.000 to 1.000 ms)");
  EXPECT_EQ(r.critical_path[1],
            "stage 1 replica 0: pp recv fwd mb0 c0 .. pp send bwd mb1 c0 (8 tasks, 0.000 to 7.000 ms)");
  EXPECT_EQ(r.critical_path[2], "stage 0 replica 0: pp recv bwd mb1 c0 .. B mb1 c0 (2 tasks, 6.000 to 9.000 ms)");
}

// Data parallel, dp = 2, tp = 2: replica 0 is one unit of two ranks; replica 1 comes from a real
// backend as one unit per rank. Replica 1's backward is slow (5 ms against 2), so the reduce-scatter
// issued at 2 by replica 0 moves only [5,6); rank 2's optimizer is slower (1.5 ms against 1).
struct DataParallel {
  models::Workload workload;
  backend::Trace trace;
};

DataParallel data_parallel(double rank2_optimizer_ms) {
  models::StageProgram s0{
      {compute(kB, 0), dp_call(CollectiveOp::kReduceScatter, {0}), compute(TaskCategory::kOptimizer, -1, {1})}};
  models::Workload w = testing::workload(2, 1, 2, 1, {s0});
  w.model_flops = 4e12;
  w.hardware_flops = 5e12;
  w.model_flops_full_attention = 4.5e12;  // as if with a sliding window
  const double end = 6 + rank2_optimizer_ms;
  auto t = testing::trace(
      {testing::unit(0, 0, {0, 1}, {{0, 2}, {2, 6, 5}, {6, 7}}), testing::unit(0, 1, {2}, {{0, 5}, {5, 6}, {6, end}}),
       testing::unit(0, 1, {3}, {{0, 5}, {5, 6}, {6, 7}})},
      std::max(end, 7.0));
  return {w, t};
}

TEST(IterationReport, MetricsMeanCriticalAndHeatMap) {
  const DataParallel d = data_parallel(1.5);
  const models::GpuSpec& gpu = models::find_gpu("A100");
  const IterationReport r = summarize(d.workload, d.trace, gpu);
  const double T = 7.5e-3;
  EXPECT_NEAR(r.iteration_time_s, T, kTol);
  // MFU = model FLOPs / (T * world * peak); tokens = global batch (1 x 2 replicas) x 2,048.
  EXPECT_NEAR(r.mfu, 4e12 / (T * 4 * gpu.peak_bf16_dense_tflops * 1e12), 1e-12);
  EXPECT_NEAR(r.hfu, 5e12 / (T * 4 * gpu.peak_bf16_dense_tflops * 1e12), 1e-12);
  EXPECT_NEAR(r.tokens_per_s, 2 * 2048 / T, 1e-6);
  EXPECT_EQ(r.flop_convention, std::string(models::kFlopConvention));
  EXPECT_NEAR(r.mfu_full_attention, 4.5e12 / (T * 4 * gpu.peak_bf16_dense_tflops * 1e12), 1e-12);
  EXPECT_EQ(r.full_attention_flop_convention, std::string(models::kFullAttentionFlopConvention));
  // Per unit: u0 compute 2+1, dp [5,6), waiting [2,5) and [7,7.5); u1 compute 5+1.5, dp 1;
  // u2 compute 5+1, dp 1, waiting 0.5. Mean weighted by ranks 2, 1, 1.
  expect_breakdown(r.mean, (2 * 3 + 6.5 + 6) / 4, 0, 0, 1, 0, (2 * 3.5 + 0 + 0.5) / 4, 7.5);
  expect_breakdown(r.critical, 6.5, 0, 0, 1, 0, 0, 7.5);  // rank 2's compute stream ends last
  EXPECT_EQ(r.critical_stage, 0);
  EXPECT_EQ(r.critical_replica, 1);
  // Heat map: replica 0 computes 3 ms, replica 1 its slowest rank's 6.5 ms; stage mean 4.75 ms.
  EXPECT_EQ(r.heat_map.dp, 2);
  EXPECT_EQ(r.heat_map.pp, 1);
  ASSERT_EQ(r.heat_map.compute_s.size(), 2u);
  EXPECT_NEAR(r.heat_map.compute_s[0], 3e-3, kTol);
  EXPECT_NEAR(r.heat_map.compute_s[1], 6.5e-3, kTol);
  EXPECT_NEAR(r.heat_map.slowdown[0], 3 / 4.75, 1e-12);
  EXPECT_NEAR(r.heat_map.slowdown[1], 6.5 / 4.75, 1e-12);
  // The chain ends on rank 2's optimizer and stays on its unit (its collective did not wait).
  ASSERT_EQ(r.critical_path.size(), 1u);
  EXPECT_EQ(r.critical_path[0], "stage 0 replica 1: B mb0 c0 .. optimizer (3 tasks, 0.000 to 7.500 ms)");
}

// Every optimizer ends at 7: the chain starts from the first unit's, whose reduce-scatter was
// issued at 2 but moved at 5 because replica 1 issued it at 5: the chain crosses to replica 1.
TEST(CriticalPath, WaitingCollectiveCrossesToTheLastReplicaToIssue) {
  const DataParallel d = data_parallel(1);
  const std::vector<TaskRef> expected{{1, 0}, {1, 1}, {0, 1}, {0, 2}};
  EXPECT_EQ(critical_chain(d.workload, d.trace), expected);
}

TEST(TaskName, NamesFromCategoryMicroBatchAndChunk) {
  EXPECT_EQ(task_name(compute(kF, 3)), "F mb3 c0");
  models::Task b = compute(kB, 3);
  b.chunk = 1;
  EXPECT_EQ(task_name(b), "B mb3 c1");
  EXPECT_EQ(task_name(compute(TaskCategory::kOptimizer, -1)), "optimizer");
  EXPECT_EQ(task_name(compute(TaskCategory::kDataLoading, -1)), "data loading");
  EXPECT_EQ(task_name(p2p(TaskKind::kPpSend, kFwd, 3, 1, 0)), "pp send fwd mb3 c0");
  EXPECT_EQ(task_name(p2p(TaskKind::kPpRecv, kBwd, 2, 1, 0)), "pp recv bwd mb2 c0");
  models::Task embedding = p2p(TaskKind::kPpSend, TaskCategory::kGradientReduce, -1, -1, 1000);
  embedding.chunk = -1;
  EXPECT_EQ(task_name(embedding), "pp send embedding grad");
  EXPECT_EQ(task_name(dp_call(CollectiveOp::kReduceScatter)), "dp reduce_scatter");
  EXPECT_EQ(task_name(dp_call(CollectiveOp::kAllGather)), "dp all_gather");
}

TEST(IterationReport, JsonHasTheStableKeysAndMemoryWhenPresent) {
  const DataParallel d = data_parallel(1.5);
  IterationReport r = summarize(d.workload, d.trace, models::find_gpu("A100"));
  std::string json = to_json(r);
  EXPECT_TRUE(balanced_json(json));
  EXPECT_EQ(json.front(), '{');
  for (const char* key : {"\"iteration_time_s\"",
                          "\"tokens_per_s\"",
                          "\"mfu\"",
                          "\"hfu\"",
                          "\"flop_convention\"",
                          "\"mfu_full_attention\"",
                          "\"full_attention_flop_convention\"",
                          "\"breakdown\"",
                          "\"mean\"",
                          "\"critical\"",
                          "\"bubble_s\"",
                          "\"waiting_s\"",
                          "\"plan\"",
                          "\"tp\": 2",
                          "\"pp\": 1",
                          "\"dp\": 2",
                          "\"vpp\": 1",
                          "\"micro_batch_size\": 1",
                          "\"num_microbatches\": 1",
                          "\"global_batch_size\": 2",
                          "\"heat_map\"",
                          "\"compute_s\"",
                          "\"critical_path\"",
                          "\"critical_replica\": 1"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  EXPECT_EQ(json.find("\"memory\""), std::string::npos);
  models::MemoryEstimate memory;
  memory.stages.push_back({100, 200, 300, 400});
  r.memory = memory;
  json = to_json(r);
  EXPECT_TRUE(balanced_json(json));
  EXPECT_NE(json.find("\"memory\""), std::string::npos);
  EXPECT_NE(json.find("\"total_bytes\": 1000"), std::string::npos);  // 100 + 200 + 300 + 400 bytes
  const std::string text = to_text(r);
  for (const char* part : {"iteration: 0.0075 s", "MFU", "HFU", "bubble", "waiting", "critical", "memory: peak"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part;
  }
}

TEST(IterationReport, IdenticalInputsGiveIdenticalJson) {
  const Pipeline p = one_f_one_b();
  const models::GpuSpec& gpu = models::find_gpu("H100");
  EXPECT_EQ(to_json(summarize(p.workload, p.trace, gpu)), to_json(summarize(p.workload, p.trace, gpu)));
}

}  // namespace
}  // namespace megasim::scenarios
