// The executor on pipelines built from models::pipeline_schedule: with communication nearly free it
// reproduces the ideal schedule's makespan (schedule semantics end to end); on a real fabric it is
// deterministic, respects every dependency and stream order, and keeps replicas in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>

#include "backend/sim/iteration_executor.h"
#include "fabric_test_util.h"
#include "iteration_executor_test_util.h"

namespace megasim::backend {
namespace {

using namespace testing;  // NOLINT: test helpers

struct Case {
  std::int64_t pp, v, m;
};

// (2) tp = dp = 1, one server, every latency zero and 1-byte transfers: each transfer drains in under
// a ns, which the fabric rounds up to 1 ns. So the makespan is simulate_schedule_ideal's, delayed by
// at most 1 ns per transfer of a micro-batch's round trip (2(K-1) of them, K = pp x v stages) plus
// the rounding of nothing else (compute times are whole ns).
TEST(IterationPipeline, NearlyFreeCommunicationGivesTheIdealSchedule) {
  topo::ClusterParams c;
  c.gpus = 8;
  c.link_latency_ns = 0;
  c.nvlink_latency_ns = 0;
  const topo::Topology topo = topo::Topology::build(c);
  const double tf = 1 * kMs, tb = 2 * kMs;
  for (const Case& k : {Case{4, 1, 8}, Case{4, 1, 3}, Case{2, 1, 5}, Case{4, 2, 8}, Case{2, 3, 4}, Case{8, 1, 8}}) {
    models::Workload w = empty_workload(1, k.pp, 1, k.v, k.m);
    add_pipeline_programs(w, PipelineOptions{});
    IterationInputs in = make_inputs(w, topo, first_gpus(k.pp), {{tf, 0}, {tb, 0}});
    in.collective.base_latency_ns = in.collective.nvlink_step_latency_ns = in.collective.net_step_latency_ns = 0;
    const Trace trace = simulate_iteration(in);
    const double ideal = models::simulate_schedule_ideal(k.pp, k.m, k.v, tf, tb) * 1e9;
    const double slack = static_cast<double>(k.m * 2 * (k.pp * k.v - 1));
    EXPECT_GE(static_cast<double>(trace.iteration_time), ideal - 1) << k.pp << " " << k.v << " " << k.m;
    EXPECT_LE(static_cast<double>(trace.iteration_time), ideal + slack) << k.pp << " " << k.v << " " << k.m;
  }
}

// Blocking sends (Megatron's 1F1B without overlap_p2p_comm: the next compute waits for the send) can
// only delay the schedule. (add_pipeline_programs posts p2p per step, which is Megatron's order for
// 1F1B; the interleaved schedule batches the next recv with the current send, which it does not
// model, so blocking interleaved programs built here could deadlock.)
TEST(IterationPipeline, BlockingSendsNeverBeatTheIdealSchedule) {
  const topo::Topology topo = topo::Topology::build(topo::ClusterParams{.gpus = 8});
  for (const std::int64_t m : {2, 4, 8}) {
    models::Workload w = empty_workload(1, 4, 1, 1, m);
    add_pipeline_programs(w, PipelineOptions{.pp_bytes = 1e6, .send_blocks_compute = true});
    const Trace trace = simulate_iteration(make_inputs(w, topo, first_gpus(4), {{1 * kMs, 0}, {2 * kMs, 0}}));
    EXPECT_GE(static_cast<double>(trace.iteration_time), models::simulate_schedule_ideal(4, m, 1, 1e-3, 2e-3) * 1e9);
  }
}

// pp = 4, dp = 4, tp = 8 on 128 GPUs (16 servers under one rail-ToR group), interleaved with v = 2,
// m = 8, 4 MB activations per TP rank (non-blocking sends) and 4 DP reduce-scatter buckets: about 100
// tasks per stage.
struct Medium {
  topo::Topology topo = topo::Topology::build(topo::ClusterParams{.gpus = 128});
  models::Workload w = [] {
    models::Workload out = empty_workload(8, 4, 4, 2, 8);
    add_pipeline_programs(out, PipelineOptions{.pp_bytes = 4e6, .dp_buckets = 4, .dp_bucket_bytes = 50e6});
    return out;
  }();
  IterationInputs inputs() const {
    IterationInputs in = make_inputs(w, topo, first_gpus(128), {{1 * kMs, 0.8 * kMs}, {2 * kMs, 1.6 * kMs}});
    in.record_flows = true;
    return in;
  }
};

// Every task starts after its deps end; tasks of a blocking stream (compute, dp) do not overlap.
void expect_semantics(const models::Workload& w, const Trace& trace) {
  for (const TraceUnit& unit : trace.units) {
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
    std::array<sim::SimTime, 4> stream_free{};
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskRecord& r = unit.records[i];
      EXPECT_LE(r.start, r.transfer_start);
      EXPECT_LE(r.transfer_start, r.end);
      for (const std::int32_t d : tasks[i].deps) EXPECT_GE(r.start, unit.records[static_cast<std::size_t>(d)].end);
      if (tasks[i].stream == models::StreamKind::kPp) continue;
      auto& free = stream_free[static_cast<std::size_t>(tasks[i].stream)];
      EXPECT_GE(r.start, free);
      free = r.end;
    }
  }
}

// (8) and semantics: the medium case runs fast, in order, and a stage's replicas, which nothing
// distinguishes (every flow stays under one ToR per rail, so no ECMP choice), have equal timelines.
TEST(IterationPipeline, MediumCaseRunsFastAndKeepsReplicasInStep) {
  const Medium medium;
  IterationStats stats;
  const auto t0 = std::chrono::steady_clock::now();
  const Trace trace = simulate_iteration(medium.inputs(), &stats);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(wall, 1.0);
  std::printf("medium case: %.3f s wall, %llu events, %llu rate solves, %llu flows\n", wall,
              static_cast<unsigned long long>(stats.events), static_cast<unsigned long long>(stats.rate_recomputations),
              static_cast<unsigned long long>(stats.flows));
  ASSERT_EQ(trace.units.size(), 16U);
  // A middle stage: 2 m v = 32 computes, a recv and a send each, 4 buckets.
  EXPECT_EQ(unit_at(trace, 4, 1, 0).records.size(), 32U + 64 + 4);
  expect_semantics(medium.w, trace);
  for (std::int64_t s = 0; s < 4; ++s) {
    for (std::int64_t d = 1; d < 4; ++d) {
      const auto& a = unit_at(trace, 4, s, 0).records;
      const auto& b = unit_at(trace, 4, s, d).records;
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].start, b[i].start) << s << " " << d << " " << i;
        ASSERT_EQ(a[i].end, b[i].end) << s << " " << d << " " << i;
      }
    }
  }
  // The iteration cannot beat the ideal schedule of its compute.
  EXPECT_GE(static_cast<double>(trace.iteration_time), models::simulate_schedule_ideal(4, 8, 2, 1e-3, 2e-3) * 1e9);
  // 2 x m x (K - 1) transfers per replica, a flow per TP rank each, plus DP ring channels.
  EXPECT_GE(stats.flows, 4U * 2 * 8 * 7 * 8);
  EXPECT_EQ(stats.dp_collectives, 4U * 4 * 8);
}

// one_replica: where nothing tells the replicas apart (the medium case: no ECMP choice), replica 0
// alone gives every stage's timeline exactly as the full simulation does, one unit per stage.
TEST(IterationPipeline, OneReplicaEqualsEveryReplicaWhenNothingTellsThemApart) {
  const Medium medium;
  IterationInputs in = medium.inputs();
  in.record_flows = false;
  const Trace full = simulate_iteration(in);
  ASSERT_TRUE(replicas_identical(in));
  in.one_replica = true;
  IterationStats stats;
  const Trace one = simulate_iteration(in, &stats);
  EXPECT_EQ(one.iteration_time, full.iteration_time);
  ASSERT_EQ(one.units.size(), 4U);
  EXPECT_EQ(stats.dp_collectives, 4U * 4 * 8);  // every DP group's rings still run
  expect_semantics(medium.w, one);
  for (std::int64_t s = 0; s < 4; ++s) {
    const TraceUnit& u = one.units[static_cast<std::size_t>(s)];
    const TraceUnit& f = unit_at(full, 4, s, 0);
    EXPECT_EQ(u.stage, s);
    EXPECT_EQ(u.replica, 0);
    EXPECT_EQ(u.ranks, f.ranks);
    ASSERT_EQ(u.records.size(), f.records.size());
    for (std::size_t i = 0; i < u.records.size(); ++i) {
      ASSERT_EQ(u.records[i].start, f.records[i].start) << s << " " << i;
      ASSERT_EQ(u.records[i].transfer_start, f.records[i].transfer_start) << s << " " << i;
      ASSERT_EQ(u.records[i].end, f.records[i].end) << s << " " << i;
    }
  }
}

// Where ECMP collides the replicas' pipeline transfers (three tiers, 16 replicas of 4 stages whose
// flows cross the cores), the full simulation's replicas differ and none of them beats replica 0
// alone on the fabric. Stragglers, pauses, failed links or a TP group across servers make replicas
// differ by themselves: replicas_identical says no.
TEST(IterationPipeline, OneReplicaBoundsTheFullIterationWhereEcmpCollides) {
  const topo::Topology topo = topo::Topology::build(small_cluster(128));
  models::Workload w = empty_workload(2, 4, 16, 1, 8);
  add_pipeline_programs(w, PipelineOptions{.pp_bytes = 8e6, .dp_buckets = 2, .dp_bucket_bytes = 20e6});
  IterationInputs in = make_inputs(w, topo, first_gpus(128), {{1 * kMs, 0}, {2 * kMs, 0}});
  const Trace full = simulate_iteration(in);
  in.one_replica = true;
  const Trace one = simulate_iteration(in);
  EXPECT_LE(one.iteration_time, full.iteration_time);
  bool replicas_differ = false;  // some task of some replica ends at another time than replica 0's
  for (std::int64_t s = 0; s < 4; ++s) {
    for (std::int64_t d = 1; d < 16; ++d) {
      const auto& a = unit_at(full, 16, s, 0).records;
      const auto& b = unit_at(full, 16, s, d).records;
      for (std::size_t i = 0; i < a.size(); ++i) replicas_differ |= a[i].end != b[i].end;
    }
  }
  EXPECT_TRUE(replicas_differ) << "no collision: the case tests nothing";

  IterationInputs slow = in;
  slow.one_replica = false;
  EXPECT_TRUE(replicas_identical(slow));
  slow.gpu_slowdown.assign(128, 1.0);
  EXPECT_TRUE(replicas_identical(slow));
  slow.gpu_slowdown[5] = 1.5;
  EXPECT_FALSE(replicas_identical(slow));
  IterationInputs failed = slow;
  failed.gpu_slowdown.clear();
  failed.failed_links = {topo::LinkId(0)};
  EXPECT_FALSE(replicas_identical(failed));
  IterationInputs across = failed;
  across.failed_links.clear();
  topo::Placement shifted = first_gpus(128);  // ranks 2k and 2k+1 on GPUs 2k+1 and 2k+2: across servers
  std::rotate(shifted.begin(), shifted.begin() + 1, shifted.end());
  across.placement = shifted;
  EXPECT_FALSE(replicas_identical(across));
}

// A fabric cut in two: every link of the pod's four aggregation switches has failed. The two stages
// sit in the two rail-ToR groups (GPUs 0-15 and 16-31 on small_cluster(32)), so their transfers,
// between the groups' ToRs, have no path left; each stage's DP rings stay under their own ToRs. The
// simulation runs out of events with the transfers stalled: the iteration can never finish, and
// simulate_iteration says so rather than calling the workload deadlocked.
TEST(IterationPipeline, TransfersWithoutAPathEndInUnroutableIteration) {
  const topo::Topology topo = topo::Topology::build(small_cluster(32));
  models::Workload w = empty_workload(2, 2, 8, 1, 4);
  add_pipeline_programs(w, PipelineOptions{.pp_bytes = 1e6, .dp_buckets = 1, .dp_bucket_bytes = 1e6});
  IterationInputs in = make_inputs(w, topo, first_gpus(32), {{1 * kMs, 0}, {2 * kMs, 0}});
  EXPECT_GT(simulate_iteration(in).iteration_time, 0);
  for (std::size_t i = 0; i < topo.num_links(); ++i) {
    const topo::Link& l = topo.link(topo::LinkId(static_cast<std::int32_t>(i)));
    if (topo.node(l.from).kind == topo::NodeKind::kAgg || topo.node(l.to).kind == topo::NodeKind::kAgg) {
      in.failed_links.emplace_back(static_cast<std::int32_t>(i));
    }
  }
  try {
    simulate_iteration(in);
    FAIL() << "an iteration across a partition finished";
  } catch (const UnroutableIteration& e) {
    // The first transfers of the schedule: stage 0's forward sends, one flow per replica.
    EXPECT_GE(e.stalled_flows(), 1u);
    EXPECT_NE(std::string(e.what()).find("no path on the damaged fabric"), std::string::npos) << e.what();
  }
}

// (7) Same inputs, same trace, on a fabric where ECMP matters (three tiers, flows through cores).
TEST(IterationPipeline, Deterministic) {
  const topo::Topology topo = topo::Topology::build(small_cluster(128));
  models::Workload w = empty_workload(2, 4, 16, 1, 8);
  add_pipeline_programs(w, PipelineOptions{.pp_bytes = 8e6, .dp_buckets = 2, .dp_bucket_bytes = 20e6});
  IterationInputs in = make_inputs(w, topo, first_gpus(128), {{1 * kMs, 0}, {2 * kMs, 0}});
  in.record_flows = true;
  const Trace a = simulate_iteration(in);
  const Trace b = simulate_iteration(in);
  expect_semantics(w, a);
  EXPECT_EQ(a.iteration_time, b.iteration_time);
  ASSERT_EQ(a.units.size(), b.units.size());
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    for (std::size_t i = 0; i < a.units[u].records.size(); ++i) {
      EXPECT_EQ(a.units[u].records[i].start, b.units[u].records[i].start);
      EXPECT_EQ(a.units[u].records[i].transfer_start, b.units[u].records[i].transfer_start);
      EXPECT_EQ(a.units[u].records[i].end, b.units[u].records[i].end);
    }
  }
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (std::size_t f = 0; f < a.flows.size(); ++f) {
    EXPECT_EQ(a.flows[f].start, b.flows[f].start);
    EXPECT_EQ(a.flows[f].end, b.flows[f].end);
    EXPECT_EQ(a.flows[f].label, b.flows[f].label);
  }
}

}  // namespace
}  // namespace megasim::backend
