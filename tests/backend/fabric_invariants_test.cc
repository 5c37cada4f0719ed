// Fabric invariants on random workloads with failures: max-min fairness and capacity at every
// recomputation, byte conservation, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/sim/fabric.h"
#include "fabric_test_util.h"
#include "sim/rng.h"

namespace megasim::backend {
namespace {

using testing::Bed;
using testing::small_cluster;

struct Workload {
  std::vector<FlowSpec> specs;
  std::vector<sim::SimTime> starts;
};

// 120 flows of 1-3 lanes between random GPUs of the 64-GPU three-tier cluster, started over 20 ms.
Workload random_workload(std::uint64_t seed) {
  sim::Rng rng(seed);
  Workload w;
  for (int i = 0; i < 120; ++i) {
    FlowSpec spec;
    const auto lanes = 1 + rng.uniform_int(3);
    for (std::uint64_t l = 0; l < lanes; ++l) {
      const auto src = static_cast<std::int32_t>(rng.uniform_int(64));
      const auto dst = static_cast<std::int32_t>((static_cast<std::uint64_t>(src) + 1 + rng.uniform_int(63)) % 64);
      spec.lanes.push_back({topo::GpuId(src), topo::GpuId(dst), static_cast<std::uint32_t>(l)});
    }
    spec.bytes_per_lane = 1e7 + 1e8 * rng.uniform01();
    w.specs.push_back(std::move(spec));
    w.starts.push_back(static_cast<sim::SimTime>(rng.uniform_int(20 * sim::kMillisecond)));
  }
  return w;
}

// random_workload plus four rings of 16 GPUs with two channels each, the pattern of a DP
// collective: each channel is one flow whose lanes are the ring's edges, and the two channels share
// every NIC cable (paired links, fabric_sharing.cc) until a random flow joins one.
Workload ring_workload(std::uint64_t seed) {
  Workload w = random_workload(seed);
  sim::Rng rng(seed + 1);
  for (int ring = 0; ring < 4; ++ring) {
    std::vector<std::int32_t> members;
    for (int i = 0; i < 16; ++i) members.push_back(static_cast<std::int32_t>(rng.uniform_int(64)));
    std::ranges::sort(members);
    members.erase(std::unique(members.begin(), members.end()), members.end());
    for (std::uint32_t channel = 0; channel < 2; ++channel) {
      FlowSpec spec;
      for (std::size_t i = 0; i < members.size(); ++i) {
        spec.lanes.push_back({topo::GpuId(members[i]), topo::GpuId(members[(i + 1) % members.size()]),
                              static_cast<std::uint32_t>(100 + 2 * ring) + channel});
      }
      spec.bytes_per_lane = 2e8 + 2e8 * rng.uniform01();
      w.specs.push_back(std::move(spec));
      w.starts.push_back(static_cast<sim::SimTime>(rng.uniform_int(4 * sim::kMillisecond)));
    }
  }
  return w;
}

struct RunResult {
  std::vector<FlowRecord> records;
  std::vector<std::vector<LinkUse>> first_usage;
  std::vector<std::string> violations;
  double network_lane_bytes = 0;
  double cross_tor_lane_bytes = 0;
  double nic_up_carried = 0;
  double tor_up_carried = 0;
  std::uint64_t skipped = 0;  // completions that kept the rates without a re-solve
  std::uint64_t solves = 0;
  std::uint64_t region_solves = 0;
  std::uint64_t region_rounds = 0;
  std::uint64_t deepest_region_rounds = 0;
};

// Runs the workload with a ToR uplink failing for 30 ms (re-routed after 5 ms) and a NIC cable
// flapping, checking the rates after every recomputation.
RunResult run(const Workload& w, FabricParams params) {
  params.qps_per_connection = 2;
  params.failure_detection_ns = 5 * sim::kMillisecond;
  Bed bed(small_cluster(64), params);
  RunResult r;
  r.first_usage.resize(w.specs.size());
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) r.violations.push_back(v);
    for (std::size_t l = 0; l < bed.topo.num_links(); ++l) {
      const topo::LinkId id(static_cast<std::int32_t>(l));
      if (bed.fabric.link_load_bytes_per_s(id) > bed.fabric.link_capacity_bytes_per_s(id) * (1 + 1e-9) + 1e-3) {
        r.violations.push_back("link over capacity");
      }
    }
  });
  const topo::LinkId uplink = bed.topo.up_links(bed.topo.tor_of(topo::GpuId(0)))[1];
  bed.sim.schedule_at(5 * sim::kMillisecond, [&] { bed.fabric.set_link_down(uplink); });
  bed.sim.schedule_at(35 * sim::kMillisecond, [&] { bed.fabric.set_link_up(uplink); });
  bed.fabric.schedule_cable_flap(bed.topo.nic_up(topo::GpuId(5)), 8 * sim::kMillisecond, 12 * sim::kMillisecond);
  for (std::size_t i = 0; i < w.specs.size(); ++i) {
    bed.sim.schedule_at(w.starts[i], [&, i] {
      const FlowId id = bed.fabric.start_flow(w.specs[i]);
      r.first_usage[i] = bed.fabric.flow_usage(id);
    });
    for (const FlowLane& lane : w.specs[i].lanes) {
      if (bed.topo.server_of(lane.src) != bed.topo.server_of(lane.dst))
        r.network_lane_bytes += w.specs[i].bytes_per_lane;
      if (bed.topo.server_of(lane.src) != bed.topo.server_of(lane.dst) &&
          bed.topo.tor_of(lane.src) != bed.topo.tor_of(lane.dst))
        r.cross_tor_lane_bytes += w.specs[i].bytes_per_lane;
    }
  }
  bed.sim.run();
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
  r.records = bed.fabric.completed_flows();
  r.skipped = bed.fabric.skipped_recomputations();
  r.solves = bed.fabric.rate_recomputations();
  r.region_solves = bed.fabric.region_recomputations();
  r.region_rounds = bed.fabric.region_rounds();
  r.deepest_region_rounds = bed.fabric.deepest_region_rounds();
  for (std::int64_t g = 0; g < bed.topo.num_gpus(); ++g) {
    r.nic_up_carried += bed.fabric.link_bytes_carried(bed.topo.nic_up(topo::GpuId(static_cast<std::int32_t>(g))));
  }
  for (const topo::NodeId tor : bed.topo.nodes_of(topo::NodeKind::kTor)) {
    for (const topo::LinkId l : bed.topo.up_links(tor)) r.tor_up_carried += bed.fabric.link_bytes_carried(l);
  }
  return r;
}

class FabricInvariants : public ::testing::TestWithParam<Routing> {};

TEST_P(FabricInvariants, MaxMinCapacityAndConservationHoldThroughFailures) {
  FabricParams params;
  params.routing = GetParam();
  const RunResult r = run(random_workload(11), params);
  EXPECT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_EQ(r.records.size(), 120u);
  // Every byte of a network lane leaves through its source NIC exactly once, and every byte of a
  // cross-ToR lane crosses one ToR uplink in total (split over QPs, spray fractions or re-routes).
  EXPECT_NEAR(r.nic_up_carried, r.network_lane_bytes, 1e-9 * r.network_lane_bytes);
  EXPECT_NEAR(r.tor_up_carried, r.cross_tor_lane_bytes, 1e-9 * r.cross_tor_lane_bytes);
  // The completion shortcut (rates kept without a re-solve) must have been exercised, so the
  // max-min check above also covers it.
  EXPECT_GT(r.skipped, 0u);
  // Both re-solve paths ran: the region solve, and the whole component where the region solve
  // gives up (dead links during the failure), so the check covers both.
  EXPECT_GT(r.region_solves, 0u);
  EXPECT_LT(r.region_solves, r.solves);
}

// Runs the workload with the region solve and again re-solving whole components: max-min holds at
// every change of the first, and both give the same flow completions (to the rounding of the two
// solves, far below a nanosecond per flow). Returns the region run.
RunResult expect_region_solve_exact(const Workload& w, FabricParams params, const std::string& context) {
  RunResult region = run(w, params);
  EXPECT_TRUE(region.violations.empty()) << context << ": " << region.violations.front();
  params.region_solve = false;
  const RunResult component = run(w, params);
  EXPECT_EQ(component.region_solves, 0u) << context;
  EXPECT_EQ(region.records.size(), w.specs.size()) << context;
  EXPECT_EQ(region.records.size(), component.records.size()) << context;
  for (std::size_t i = 0; i < std::min(region.records.size(), component.records.size()); ++i) {
    EXPECT_EQ(region.records[i].id, component.records[i].id) << context << " flow " << i;
    EXPECT_NEAR(static_cast<double>(region.records[i].end), static_cast<double>(component.records[i].end), 2.0)
        << context << " flow " << i;
  }
  return region;
}

RunResult expect_region_solve_exact(const Workload& w, Routing routing, const std::string& context) {
  FabricParams params;
  params.routing = routing;
  return expect_region_solve_exact(w, params, context);
}

TEST_P(FabricInvariants, RegionSolveAgreesWithComponentSolve) {
  const RunResult r = expect_region_solve_exact(random_workload(23), GetParam(), "seed 23");
  EXPECT_GT(r.region_solves, 0u);
  // Some regions grew: the rounds after the first check only the outside flows of links that read
  // differently from the round before, which this covers.
  EXPECT_GT(r.region_rounds, r.region_solves);
}

// Ring channels pair up on the links they alone share; flows joining and leaving those links break
// and re-form the pairs. The region solve sees a pair's links as one, the component solve sees every
// link.
TEST_P(FabricInvariants, PairedRingChannelsStayMaxMinFair) {
  EXPECT_GT(expect_region_solve_exact(ring_workload(31), GetParam(), "rings, seed 31").region_solves, 0u);
}

// Sixty more workloads, random flows and paired ring channels alternately, through the same failures.
// Seed 142 with spraying caught a region check that trusted a bottleneck hint on a link that had
// become a pair's since (its list held the partner's old rate).
TEST_P(FabricInvariants, SixtyMoreWorkloadsStayExact) {
  for (std::uint64_t seed = 100; seed < 160; ++seed) {
    const Workload w = seed % 2 ? ring_workload(seed) : random_workload(seed);
    expect_region_solve_exact(w, GetParam(), "seed " + std::to_string(seed));
    if (::testing::Test::HasFailure()) return;  // one failing workload is enough to read
  }
}

// A region solve grows round by round; past its patience it gives up for the component once its
// rounds have cost more than the last component solve. With a patience of one round both ways are
// taken: more solves fall back to the component, and some regions still grow on (those cheaper than
// the component), and every result stays max-min fair and agrees with the component solve.
TEST_P(FabricInvariants, RegionSolveThatWeighsItsCostStaysExact) {
  std::uint64_t patient_region_solves = 0;
  std::uint64_t impatient_region_solves = 0;
  std::uint64_t impatient_deepest = 0;
  for (std::uint64_t seed = 200; seed < 220; ++seed) {
    const Workload w = seed % 2 ? ring_workload(seed) : random_workload(seed);
    FabricParams params;
    params.routing = GetParam();
    patient_region_solves += run(w, params).region_solves;
    params.region_patience_rounds = 1;
    const RunResult r = expect_region_solve_exact(w, params, "patience 1, seed " + std::to_string(seed));
    if (::testing::Test::HasFailure()) return;
    impatient_region_solves += r.region_solves;
    impatient_deepest = std::max(impatient_deepest, r.deepest_region_rounds);
  }
  EXPECT_LT(impatient_region_solves, patient_region_solves);
  EXPECT_GT(impatient_deepest, 1u);
}

INSTANTIATE_TEST_SUITE_P(AllRoutings, FabricInvariants,
                         ::testing::Values(Routing::kEcmp, Routing::kSpray, Routing::kAdaptive),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(FabricDeterminism, SameSeedGivesIdenticalRecords) {
  const Workload w = random_workload(5);
  FabricParams params;
  params.ecmp.seed = 77;
  const RunResult a = run(w, params);
  const RunResult b = run(w, params);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].id, b.records[i].id);
    EXPECT_EQ(a.records[i].start, b.records[i].start);
    EXPECT_EQ(a.records[i].end, b.records[i].end);
  }
}

TEST(FabricDeterminism, DifferentEcmpSeedGivesDifferentPaths) {
  const Workload w = random_workload(5);
  FabricParams params;
  params.ecmp.seed = 77;
  const RunResult a = run(w, params);
  params.ecmp.seed = 78;
  const RunResult b = run(w, params);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < w.specs.size(); ++i) {
    bool same = a.first_usage[i].size() == b.first_usage[i].size();
    for (std::size_t j = 0; same && j < a.first_usage[i].size(); ++j) {
      same = a.first_usage[i][j].link == b.first_usage[i][j].link &&
             a.first_usage[i][j].weight == b.first_usage[i][j].weight;
    }
    differing += same ? 0 : 1;
  }
  EXPECT_GT(differing, 10u);
}

}  // namespace
}  // namespace megasim::backend
