// Collectives of groups that span servers, played beside their stage's peers: flows of different
// groups that share a link slow each other by the link's share (derived from the rates, not from
// the simulator), windows bound a play, and the executor times a unit's group with its peers.
#include "backend/sim/peer_collective_times.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backend/sim/compute_groups.h"
#include "backend/sim/tp_collective_time.h"
#include "collective_runner_test_util.h"
#include "iteration_executor_test_util.h"

namespace megasim::backend {
namespace {

using models::CollectiveOp;
using namespace testing;  // NOLINT: test helpers

// Two ToRs of 4 servers of 2 GPUs (rails 1: a server's NICs on one ToR), NICs 200 Gb/s; a ToR has
// 4 down ports of 400 Gb/s split in two NIC links each and, at 4:1, one 400 Gb/s uplink.
// GPUs 0-7 sit under ToR 0, 8-15 under ToR 1.
topo::Topology two_tors() {
  topo::ClusterParams c;
  c.gpus = 16;
  c.gpus_per_server = 2;
  c.rails = 1;
  c.switch_radix = 8;
  c.servers_per_group = 4;
  c.tor_oversubscription = 4;
  return topo::Topology::build(c);
}

// Group i pairs GPU i under ToR 0 with GPU 8 + i under ToR 1.
std::vector<std::vector<topo::GpuId>> cross_tor_pairs(int n) {
  std::vector<std::vector<topo::GpuId>> groups;
  for (std::int32_t i = 0; i < n; ++i) groups.push_back({topo::GpuId(i), topo::GpuId(8 + i)});
  return groups;
}

// Seconds per byte of an all-to-all over `groups` (all at once, group 0's time): the slope between
// two sizes, which removes the latencies.
double seconds_per_byte(const topo::Topology& topo, int groups, std::size_t max_flows = kMaxPeerFlows) {
  PeerCollectiveTimes peers(topo, FabricParams{}, models::CollectiveParams{}, max_flows);
  const std::size_t set = peers.add_set(cross_tor_pairs(groups));
  const double small = 64e6, large = 128e6;
  const auto t = [&](double bytes) {
    return sim::to_seconds(peers.time_ns(set, cross_tor_pairs(1)[0], CollectiveOp::kAllToAll, bytes));
  };
  return (t(large) - t(small)) / (large - small);
}

// A member of a 2-member all-to-all sends half its bytes to the other, over its NIC: alone at the
// NIC's rate r; with 8 groups, 8 flows each way cross ToR 0's one uplink of 2r, r/4 each: 4x slower
// per byte. Two groups (2 flows of r on 2r) are not slowed.
TEST(PeerCollectiveTimes, GroupsSharingAnUplinkSlowEachOtherByItsShare) {
  const topo::Topology topo = two_tors();
  const double r = nic_bytes_per_s(topo.params(), FabricParams{});
  const double alone = seconds_per_byte(topo, 1);
  EXPECT_NEAR(alone, 0.5 / r, 1e-6 * 0.5 / r + 1e-16);
  EXPECT_NEAR(seconds_per_byte(topo, 2), alone, 1e-6 * alone);
  EXPECT_NEAR(seconds_per_byte(topo, 8), 4 * alone, 4e-6 * alone);
  // Alone it is the time tp_collective_time_ns gives the group alone.
  PeerCollectiveTimes peers(topo, FabricParams{}, models::CollectiveParams{});
  const std::size_t set = peers.add_set(cross_tor_pairs(1));
  EXPECT_EQ(peers.time_ns(set, cross_tor_pairs(1)[0], CollectiveOp::kAllToAll, 64e6),
            tp_collective_time_ns(topo, FabricParams{}, models::CollectiveParams{}, cross_tor_pairs(1)[0],
                                  CollectiveOp::kAllToAll, 64e6));
}

// Windows of at most 4 flows hold two groups (2 flows each): the 8 groups are played as 4 pairs,
// each pair as unslowed as two groups together.
TEST(PeerCollectiveTimes, WindowsBoundAPlay) {
  const topo::Topology topo = two_tors();
  EXPECT_NEAR(seconds_per_byte(topo, 8, 4), seconds_per_byte(topo, 2), 1e-6 * seconds_per_byte(topo, 2));
  // A window smaller than one group still plays that group.
  EXPECT_NEAR(seconds_per_byte(topo, 8, 1), seconds_per_byte(topo, 1), 1e-6 * seconds_per_byte(topo, 1));
}

// An MoE workload of 16 replicas (tp 1, pp 1) with EP 2 placed so that every expert group is a
// cross-ToR pair: a stage's expert groups partition its GPUs, and the executor times each unit's
// dispatch beside the 7 other groups (4x the data time of a group alone).
TEST(PeerCollectiveTimes, TheExecutorTimesAUnitsGroupWithItsStagesPeers) {
  const topo::Topology topo = two_tors();
  models::Workload w = empty_workload(1, 1, 16);
  w.model.num_experts = 2;
  w.plan.ep = 2;
  w.kernels.resize(1);
  // Ranks 2i and 2i + 1 form expert group i: place them on GPU i and GPU 8 + i.
  topo::Placement placement;
  for (std::int32_t i = 0; i < 8; ++i) {
    placement.emplace_back(i);
    placement.emplace_back(8 + i);
  }
  const std::vector<std::vector<topo::GpuId>> groups = stage_groups(w, placement, 0, models::ComputeGroup::kExpert);
  ASSERT_EQ(groups.size(), 8U);
  std::set<topo::GpuId> seen;
  for (const auto& g : groups) {
    ASSERT_EQ(g.size(), 2U);
    EXPECT_NE(topo.server_of(g[0]), topo.server_of(g[1]));
    seen.insert(g.begin(), g.end());
  }
  EXPECT_EQ(seen.size(), 16U);
  EXPECT_TRUE(stage_groups(w, placement, 0, models::ComputeGroup::kTensor).empty());

  const auto exposed_s = [&](double bytes) {
    models::Workload run = w;
    run.kernels[0].tp_collectives.push_back({CollectiveOp::kAllToAll, bytes, 1, false, models::ComputeGroup::kExpert});
    add_task(run.stages[0], compute_task(0, 1));
    IterationInputs in = make_inputs(run, topo, placement, {{1 * kMs, 0}});
    return static_cast<double>(simulate_iteration(in).units[0].records[0].tp_exposed) * 1e-9;
  };
  const double per_byte = (exposed_s(128e6) - exposed_s(64e6)) / 64e6;
  const double alone = 0.5 / nic_bytes_per_s(topo.params(), FabricParams{});
  EXPECT_NEAR(per_byte, 4 * alone, 1e-5 * alone);
}

}  // namespace
}  // namespace megasim::backend
