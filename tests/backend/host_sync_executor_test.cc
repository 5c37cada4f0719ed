// The simulator's timing of Megatron-LM's host synchronisation (models/workload.h), on workloads
// that build_workload makes, with every kernel list timed 1 ms (data loading 0) so each effect can be
// counted on the schedule by hand:
//  - batch_p2p_sync at pp = 2 with one micro-batch: the critical path F(0) -> transfer ->
//    F(1) B(1) -> transfer -> B(0) crosses two communication points, so each µs of host gap adds 2 µs;
//  - synchronous data loading at pp = 1: every micro-batch's forward waits for one get_batch, which
//    costs the gap plus the host's get_batch time;
//  - the per-micro-batch loss all-reduce at pp = 1, dp = 2: every micro-batch's backward waits for
//    one 4-byte all-reduce of the same group on an idle fabric, so m micro-batches add m times one.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "iteration_executor_test_util.h"
#include "models/workload.h"
#include "tests/models/workload_test_util.h"
#include "topology/topology.h"

namespace megasim::backend {
namespace {

using models::testing::resolved;
using models::testing::Shape;
using models::testing::small_gpt;

models::Workload build(const Shape& s, const std::function<void(models::ParallelPlan&)>& change) {
  return models::build_workload(small_gpt(), resolved(small_gpt(), s, [&](models::ParallelPlan& p) {
                                  p.async_data_loading = true;
                                  p.average_loss_per_micro_batch = false;
                                  p.batch_p2p_sync = false;
                                  change(p);
                                }));
}

// Iteration time in ns with the given host gap and get_batch time.
sim::SimTime iteration_ns(const models::Workload& w, std::int64_t gap_ns, std::int64_t get_batch_ns = 0) {
  const topo::Topology topo = topo::Topology::build(topo::ClusterParams{.gpus = 8});
  std::vector<KernelTime> times;
  for (const models::KernelList& k : w.kernels) {
    times.push_back({k.name.rfind("data loading", 0) == 0 ? 0.0 : 1e-3, 0.0});
  }
  IterationInputs in = testing::make_inputs(w, topo, testing::first_gpus(w.plan.world_size), times);
  in.calibration.host_sync_gap_ns = gap_ns;
  in.calibration.get_batch_host_ns = get_batch_ns;
  return simulate_iteration(in).iteration_time;
}

TEST(HostSyncExecutor, EachCommunicationPointOnTheCriticalPathAddsOneGap) {
  const models::Workload synced = build(Shape{1, 2, 1, 1}, [](models::ParallelPlan& p) { p.batch_p2p_sync = true; });
  const models::Workload plain = build(Shape{1, 2, 1, 1}, [](models::ParallelPlan&) {});
  const sim::SimTime base = iteration_ns(plain, 0);
  EXPECT_EQ(iteration_ns(synced, 0), base);  // the synchronisation alone, without a gap, costs nothing
  EXPECT_EQ(iteration_ns(plain, 70'000), base);
  EXPECT_EQ(iteration_ns(synced, 70'000), base + 2 * 70'000);
}

TEST(HostSyncExecutor, MoreMicroBatchesCrossMoreCommunicationPoints) {
  sim::SimTime previous = 0;
  for (const std::int64_t m : {2, 4, 8}) {
    const models::Workload plain = build(Shape{1, 4, 1, m}, [](models::ParallelPlan&) {});
    const models::Workload synced = build(Shape{1, 4, 1, m}, [](models::ParallelPlan& p) { p.batch_p2p_sync = true; });
    const sim::SimTime added = iteration_ns(synced, 50'000) - iteration_ns(plain, 50'000);
    EXPECT_GT(added, previous) << m;
    // 1F1B with equal steps takes (m + pp - 1) forward-backward pairs of steps end to end, each
    // preceded by at most one synchronisation; the fill and drain alone cross 2(pp - 1) points.
    EXPECT_LE(added, 2 * (m + 4 - 1) * 50'000) << m;
    EXPECT_GE(added, 2 * (4 - 1) * 50'000) << m;
    previous = added;
  }
}

TEST(HostSyncExecutor, SynchronousGetBatchCostsTheGapAndTheHostsTimePerMicroBatch) {
  for (const std::int64_t m : {1, 3, 6}) {
    const models::Workload async = build(Shape{1, 1, 1, m}, [](models::ParallelPlan&) {});
    const models::Workload sync =
        build(Shape{1, 1, 1, m}, [](models::ParallelPlan& p) { p.async_data_loading = false; });
    EXPECT_EQ(iteration_ns(sync, 40'000, 300'000) - iteration_ns(async, 40'000, 300'000), m * (40'000 + 300'000));
  }
}

TEST(HostSyncExecutor, TheLossAllReduceAddsTheSameLatencyEveryMicroBatch) {
  const auto added = [](std::int64_t m) {
    const models::Workload off = build(Shape{1, 1, 2, m}, [](models::ParallelPlan&) {});
    const models::Workload on =
        build(Shape{1, 1, 2, m}, [](models::ParallelPlan& p) { p.average_loss_per_micro_batch = true; });
    return iteration_ns(on, 0) - iteration_ns(off, 0);
  };
  const sim::SimTime one = added(1);
  // A latency-bound call: at least NCCL's fixed call cost (collective.base_latency_us = 10), far
  // below a ring's bandwidth time for any real bucket.
  EXPECT_GE(one, 10'000);
  EXPECT_LT(one, 100'000);
  EXPECT_EQ(added(4), 4 * one);
}

}  // namespace
}  // namespace megasim::backend
