// The iteration executor on hand-built workloads whose times follow from the kernel times given,
// the fabric's rates (NIC 200 Gb/s x 0.96 = 24e9 B/s, NVLink 300 GB/s x 0.8 = 240e9 B/s) and the
// collective cost shape of models/collective.h.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backend/sim/iteration_executor.h"
#include "iteration_executor_test_util.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

using namespace testing;  // NOLINT: test helpers

constexpr double kNic = 200e9 / 8 * 0.96;
constexpr double kNvLink = 300e9 * 0.8;

// Default cluster (8 GPUs per server on 8 rails, 64 servers per rail-ToR group), `servers` servers.
topo::Topology cluster(std::int64_t servers) {
  topo::ClusterParams c;
  c.gpus = 8 * servers;
  return topo::Topology::build(c);
}

double ns(const sim::SimTime t) {
  return static_cast<double>(t);
}

// (1) One stage, one replica, tp = 1: the compute stream runs the tasks back to back, so the
// iteration is the sum of the task durations: 2 x 1.25 + 0.5 + 1.25 = 4.25 ms, every duration a
// whole number of ns.
TEST(IterationExecutor, SingleRankRunsComputeBackToBack) {
  models::Workload w = empty_workload(1, 1, 1);
  w.kernels.resize(2);
  auto& program = w.stages[0];
  add_task(program, compute_task(0, 2));
  add_task(program, compute_task(1, 1));
  add_task(program, compute_task(0, 1, {0}));
  const topo::Topology topo = cluster(1);
  const Trace trace = simulate_iteration(make_inputs(w, topo, first_gpus(1), {{1.25 * kMs, 0}, {0.5 * kMs, 0}}));
  EXPECT_EQ(trace.backend, "sim");
  EXPECT_EQ(trace.iteration_time, 4'250'000);
  ASSERT_EQ(trace.units.size(), 1U);
  const auto& r = trace.units[0].records;
  ASSERT_EQ(r.size(), 3U);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].end, 2'500'000);
  EXPECT_EQ(r[1].start, 2'500'000);
  EXPECT_EQ(r[2].start, 3'000'000);
  EXPECT_EQ(r[2].end, 4'250'000);
  for (const TaskRecord& rec : r) EXPECT_EQ(rec.tp_exposed, 0);
}

// Two stages, one micro-batch, tp = 2 on two servers: stage 0 on GPUs 0, 1 and stage 1 on GPUs 8, 9.
models::Workload two_stage_pipeline(double bytes) {
  models::Workload w = empty_workload(2, 2, 1);
  w.kernels.resize(4);
  auto& s0 = w.stages[0];
  const std::int32_t f0 = add_task(s0, compute_task(0));
  add_task(s0, p2p_task(models::TaskKind::kPpSend, +1, 0, bytes, {f0}));
  const std::int32_t recv0 = add_task(s0, p2p_task(models::TaskKind::kPpRecv, +1, 1, bytes));
  add_task(s0, compute_task(1, 1, {recv0}));
  auto& s1 = w.stages[1];
  const std::int32_t recv1 = add_task(s1, p2p_task(models::TaskKind::kPpRecv, -1, 0, bytes));
  const std::int32_t f1 = add_task(s1, compute_task(2, 1, {recv1}));
  const std::int32_t b1 = add_task(s1, compute_task(3, 1, {f1}));
  add_task(s1, p2p_task(models::TaskKind::kPpSend, -1, 1, bytes, {b1}));
  return w;
}

// Its compute times and flow records: f0 1 ms, b0 2 ms, f1 1.5 ms, b1 3 ms.
constexpr double kTf0 = 1 * kMs, kTb0 = 2 * kMs, kTf1 = 1.5 * kMs, kTb1 = 3 * kMs;
IterationInputs two_stage_inputs(const models::Workload& w, const topo::Topology& topo) {
  IterationInputs in = make_inputs(w, topo, placement_of({0, 1, 8, 9}), {{kTf0, 0}, {kTb0, 0}, {kTf1, 0}, {kTb1, 0}});
  in.record_flows = true;
  return in;
}

// (3) The two-stage pipeline: each transfer is one flow per TP rank (0 -> 8 on rail 0, 1 -> 9 on
// rail 1), each on its own NICs under one ToR: bytes / 24e9 B/s + 2 links x 600 ns. With 24e6 bytes
// that is 1 ms + 1200 ns (the fabric rounds the drain up to a whole ns). iteration = f0 + x + f1 +
// b1 + x + b0.
TEST(IterationExecutor, TwoStagePipelineAddsTransfersOnTheNetwork) {
  const double bytes = 24e6;
  const models::Workload w = two_stage_pipeline(bytes);
  const topo::Topology topo = cluster(2);
  const Trace trace = simulate_iteration(two_stage_inputs(w, topo));
  const double x = bytes / kNic + 2 * 600e-9;
  const double expected = kTf0 + x + kTf1 + kTb1 + x + kTb0;
  EXPECT_NEAR(ns(trace.iteration_time), expected * 1e9, 4);
  // The send and its recv share their transfer: it starts when both are posted and ends for both.
  const auto& r0 = trace.units[0].records;
  const auto& r1 = trace.units[1].records;
  EXPECT_EQ(r0[1].start, 1'000'000);  // the send posts when f0 ends
  EXPECT_EQ(r1[0].start, 0);          // the recv posts at once
  EXPECT_EQ(r0[1].transfer_start, r1[0].transfer_start);
  EXPECT_EQ(r0[1].end, r1[0].end);
  EXPECT_EQ(r0[2].end, r1[3].end);
  ASSERT_EQ(trace.flows.size(), 4U);  // two transfers, a flow per TP rank each
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(trace.flows[i].lanes, 1) << i;
    EXPECT_EQ(trace.flows[i].bytes_per_lane, bytes) << i;
    EXPECT_EQ(trace.flows[i].label, i < 2 ? "pp fwd stage 0 -> 1 replica 0" : "pp bwd stage 1 -> 0 replica 0") << i;
  }
}

// The TP ranks' shards of a transfer share no rate: with GPU 1's NIC at half speed, rank 1's flow
// takes 2 ms + 1200 ns and rank 0's still 1 ms + 1200 ns; the transfer (the send, the recv and the
// stage's next op) ends with its last shard.
TEST(IterationExecutor, TransferEndsWithItsSlowestTpRank) {
  const double bytes = 24e6;
  const models::Workload w = two_stage_pipeline(bytes);
  const topo::Topology topo = cluster(2);
  IterationInputs in = two_stage_inputs(w, topo);
  in.degraded_links = {{topo.nic_up(topo::GpuId(1)), 0.5}};
  const Trace trace = simulate_iteration(in);
  const double fast = bytes / kNic + 2 * 600e-9;
  const double slow = bytes / (0.5 * kNic) + 2 * 600e-9;
  // Forward: rank 1 sends over its slowed uplink; backward: it receives over GPU 9's, at full speed.
  EXPECT_NEAR(ns(trace.iteration_time), (kTf0 + slow + kTf1 + kTb1 + fast + kTb0) * 1e9, 4);
  const auto& r0 = trace.units[0].records;
  EXPECT_NEAR(ns(r0[1].end), (kTf0 + slow) * 1e9, 2);
  ASSERT_EQ(trace.flows.size(), 4U);
  // The forward transfer's shards, in the order they were delivered: rank 0's, then rank 1's.
  EXPECT_NEAR(ns(trace.flows[0].end - trace.flows[0].start), fast * 1e9, 2);
  EXPECT_NEAR(ns(trace.flows[1].end - trace.flows[1].start), slow * 1e9, 2);
  EXPECT_EQ(trace.flows[1].label, "pp fwd stage 0 -> 1 replica 0");
}

// (4) dp = 4, one GPU per replica on four servers under one ToR (GPUs 0, 8, 16, 24, all rail 0).
// Replica 2's GPU is 1.5x slower, so the all-reduce starts at 1.5 ms, when the last replica issues
// it. Flat ring of n = 4 (one member per server), C channels: each channel's edge carries
// 2(n-1)/n x S / C and every NIC carries one lane of each channel, so a channel gets 24e9 / C B/s:
// time = base + 2(n-1) x net step + 2(n-1)/n x S / 24e9. All replicas end it together.
TEST(IterationExecutor, DataParallelAllReduceWaitsForTheSlowestReplica) {
  models::Workload w = empty_workload(1, 1, 4);
  w.kernels.resize(1);
  const double bytes = 96e6;
  const std::int32_t f = add_task(w.stages[0], compute_task(0));
  add_task(w.stages[0], dp_task(models::CollectiveOp::kAllReduce, bytes, {f}));
  const topo::Topology topo = cluster(4);
  IterationInputs in = make_inputs(w, topo, placement_of({0, 8, 16, 24}), {{1 * kMs, 0}});
  in.gpu_slowdown.assign(32, 1.0);
  in.gpu_slowdown[16] = 1.5;
  const Trace trace = simulate_iteration(in);
  const models::CollectiveParams& p = in.collective;
  const double ring = sim::to_seconds(p.base_latency_ns + 6 * p.net_step_latency_ns) + 1.5 * bytes / kNic;
  for (std::int64_t d = 0; d < 4; ++d) {
    const TaskRecord& ar = unit_at(trace, 4, 0, d).records[1];
    EXPECT_EQ(ar.start, d == 2 ? 1'500'000 : 1'000'000) << d;
    EXPECT_EQ(ar.transfer_start, 1'500'000) << d;
    EXPECT_NEAR(ns(ar.end), (1.5 * kMs + ring) * 1e9, 4) << d;
    EXPECT_EQ(ar.end, trace.iteration_time);
  }
}

// A DP group of one member (dp = 1) pays only the collective's base latency (no phases).
TEST(IterationExecutor, DataParallelGroupOfOneTakesBaseLatency) {
  models::Workload w = empty_workload(2, 1, 1);
  w.kernels.resize(1);
  const std::int32_t f = add_task(w.stages[0], compute_task(0));
  add_task(w.stages[0], dp_task(models::CollectiveOp::kReduceScatter, 1e6, {f}));
  const topo::Topology topo = cluster(1);
  const IterationInputs in = make_inputs(w, topo, first_gpus(2), {{1 * kMs, 0}});
  const Trace trace = simulate_iteration(in);
  EXPECT_EQ(trace.iteration_time, 1'000'000 + in.collective.base_latency_ns);
}

// (6) tp = 8, dp = 2: unit 0 on server 0, unit 1 on server 1. One GPU of unit 0 is 1.1x slower: its
// compute (2 ms) takes 2.2 ms, the TP all-reduce inside the task is not slowed. All-reduce of S over
// a flat NVLink ring of 8 with C channels: base + 14 NVLink steps + 2 x 7/8 x S / 240e9.
TEST(IterationExecutor, SlowGpuSlowsItsUnitsCompute) {
  models::Workload w = empty_workload(8, 1, 2);
  w.kernels.resize(1);
  const double bytes = 32e6;
  w.kernels[0].tp_collectives.push_back({models::CollectiveOp::kAllReduce, bytes, 1, false});
  add_task(w.stages[0], compute_task(0));
  const topo::Topology topo = cluster(2);
  IterationInputs in = make_inputs(w, topo, first_gpus(16), {{2 * kMs, 1 * kMs}});
  in.gpu_slowdown.assign(16, 1.0);
  in.gpu_slowdown[3] = 1.1;
  const Trace trace = simulate_iteration(in);
  const models::CollectiveParams& p = in.collective;
  const double tp = sim::to_seconds(p.base_latency_ns + 14 * p.nvlink_step_latency_ns) + 2 * 7.0 / 8 * bytes / kNvLink;
  const TaskRecord& slow = unit_at(trace, 2, 0, 0).records[0];
  const TaskRecord& fast = unit_at(trace, 2, 0, 1).records[0];
  EXPECT_NEAR(ns(fast.end), (2 * kMs + tp) * 1e9, 2);
  EXPECT_NEAR(ns(slow.end), (2.2 * kMs + tp) * 1e9, 2);
  EXPECT_NEAR(ns(slow.end - fast.end), 0.2 * kMs * 1e9, 2);
  EXPECT_NEAR(ns(slow.tp_exposed), tp * 1e9, 2);
  EXPECT_EQ(unit_at(trace, 2, 0, 1).ranks, (std::vector<std::int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(IterationExecutor, RejectsBadSlowdownsAndKernelTimes) {
  models::Workload w = empty_workload(1, 1, 1);
  w.kernels.resize(1);
  add_task(w.stages[0], compute_task(0));
  const topo::Topology topo = cluster(1);
  const auto key_of = [&](const IterationInputs& in) {
    try {
      (void)simulate_iteration(in);
    } catch (const sim::ConfigError& e) {
      return e.key();
    }
    return std::string("no error");
  };
  IterationInputs in = make_inputs(w, topo, first_gpus(1), {{1 * kMs, 0}});
  in.gpu_slowdown.assign(8, 1.0);
  in.gpu_slowdown[0] = 0.9;
  EXPECT_EQ(key_of(in), "stragglers.gpu_slowdown");
  in.gpu_slowdown[0] = std::nan("");
  EXPECT_EQ(key_of(in), "stragglers.gpu_slowdown");
  in.gpu_slowdown.assign(7, 1.0);
  EXPECT_EQ(key_of(in), "stragglers.gpu_slowdown");
  in.gpu_slowdown.clear();
  in.kernel_times = {{1 * kMs, 0}, {1 * kMs, 0}};
  EXPECT_EQ(key_of(in), "iteration.kernel_times");
  in.kernel_times = {{-1 * kMs, 0}};
  EXPECT_EQ(key_of(in), "iteration.kernel_times");
  in.kernel_times = {{1 * kMs, -1}};
  EXPECT_EQ(key_of(in), "iteration.kernel_times");
  in.kernel_times = {{1 * kMs, 0}};
  EXPECT_EQ(key_of(in), "no error");
}

}  // namespace
}  // namespace megasim::backend
