// Rail planes (cluster.rail_planes): DeepSeek's multi-plane fat tree (ISCA'25, arXiv 2505.09343), each
// rail its own leaf-spine. Counts, paths and the NVLink forwarding of cross-rail transfers derived by
// hand from the shape (cluster_params.h): 2,048 GPUs, 8 rails, 64-port leaves (32 NICs down, 32 up),
// spines of 64 down ports.
#include <gtest/gtest.h>

#include "sim/error.h"
#include "topology/ecmp.h"
#include "topology/routing.h"
#include "topology/summary.h"
#include "topology/topology.h"

namespace megasim::topo {
namespace {

ClusterParams planes(std::int64_t gpus = 2048) {
  ClusterParams p;
  p.gpus = gpus;
  p.gpus_per_server = 8;
  p.rails = 8;
  p.nic_gbps = 400;
  p.switch_port_gbps = 400;
  p.switch_radix = 64;
  p.agg_switch_radix = 128;
  p.tor_downlink_split = 1;
  p.servers_per_group = 32;
  p.rail_planes = true;
  return p;
}

std::uint32_t first(NodeId, std::span<const LinkId>) {
  return 0;
}

// 256 servers in 8 groups of 32: 64 leaves (a group's 8 rails), each with 32 uplinks to the 32
// spines of its rail: 8 x 32 = 256 spines, each reaching the 8 leaves of its rail. No cable joins
// two rails, and the bisection is full, per plane, as the max flow over the built graph says.
TEST(RailPlanes, EachRailIsALeafSpineOfItsOwn) {
  const Topology t = Topology::build(planes());
  EXPECT_EQ(t.tiers(), 2);
  EXPECT_EQ(t.num_pods(), 1);
  EXPECT_EQ(t.nodes_of(NodeKind::kTor).size(), 64u);
  EXPECT_EQ(t.nodes_of(NodeKind::kAgg).size(), 256u);
  EXPECT_TRUE(t.nodes_of(NodeKind::kCore).empty());
  std::vector<int> down_ports(t.num_nodes(), 0);
  for (const Link& l : t.links()) {
    if (l.kind != LinkKind::kTorAgg || l.direction != LinkDirection::kUp) continue;
    EXPECT_EQ(t.node(l.from).rail, t.node(l.to).rail);
    ++down_ports[l.to.index()];
  }
  for (const NodeId a : t.nodes_of(NodeKind::kAgg)) EXPECT_EQ(down_ports[a.index()], 8);
  const TopologySummary s = summarize(t);
  EXPECT_EQ(s.rail_planes, 8);
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 1.0);
  EXPECT_DOUBLE_EQ(bisection_gbps_formula(t), bisection_gbps_max_flow(t));
}

// Within a rail: GPU 0 to GPU 256 (server 32, the next group, rail 0) is leaf, spine, leaf over 4
// links and 32 equal-cost paths. Across rails: GPU 0 to GPU 257 (rail 1) first crosses NVLink to
// GPU 1 (server 0's GPU on rail 1), whose NIC sends it on rail 1: 6 links, 32 paths; to GPU 9
// (server 1, rail 1, under GPU 1's leaf) 4 links. Every network hop stays on one rail.
TEST(RailPlanes, CrossRailTransfersAreForwardedOverNvlink) {
  const Topology t = Topology::build(planes());
  const EcmpMembership m(t.num_links());
  const auto same = route(t, GpuId(0), GpuId(256), m, first);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->size, 4);
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(256)), 32);
  EXPECT_EQ(t.rail_forwarder(GpuId(0), GpuId(257)), GpuId(1));
  EXPECT_EQ(t.rail_forwarder(GpuId(0), GpuId(256)), GpuId(0));
  EXPECT_EQ(t.rail_forwarder(GpuId(0), GpuId(3)), GpuId(0));  // the same server: NVLink alone
  const auto cross = route(t, GpuId(0), GpuId(257), m, first);
  ASSERT_TRUE(cross.has_value());
  ASSERT_EQ(cross->size, 6);
  EXPECT_EQ(cross->links[0], t.nvlink_up(GpuId(0)));
  EXPECT_EQ(cross->links[1], t.nvlink_down(GpuId(1)));
  EXPECT_EQ(cross->links[2], t.nic_up(GpuId(1)));
  EXPECT_EQ(cross->links[5], t.nic_down(GpuId(257)));
  for (std::size_t i = 2; i < 6; ++i) {
    const Link& l = t.link(cross->links[i]);
    for (const NodeId n : {l.from, l.to}) {
      if (t.node(n).kind != NodeKind::kNvSwitch) {
        EXPECT_EQ(t.node(n).rail, 1) << i;
      }
    }
  }
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(257)), 32);
  const auto near = route(t, GpuId(0), GpuId(9), m, first);
  ASSERT_TRUE(near.has_value());
  EXPECT_EQ(near->size, 4);
  // Sprayed: the NVLink hops and the NICs carry all of it, each of the 32 spines 1/32 (up from GPU
  // 1's leaf and down to GPU 257's).
  double up = 0, down = 0;
  for (const WeightedLink& w : spray_usage(t, GpuId(0), GpuId(257), m)) {
    if (t.link(w.link).kind == LinkKind::kTorAgg) {
      EXPECT_DOUBLE_EQ(w.weight, 1.0 / 32);
      (t.link(w.link).direction == LinkDirection::kUp ? up : down) += w.weight;
    } else {
      EXPECT_DOUBLE_EQ(w.weight, 1.0);
    }
  }
  EXPECT_DOUBLE_EQ(up, 1.0);
  EXPECT_DOUBLE_EQ(down, 1.0);
  // Without rail planes the spines serve every rail: no NVLink hop, and rail 0's NIC sends it.
  ClusterParams shared = planes();
  shared.rail_planes = false;
  const Topology s = Topology::build(shared);
  const auto direct = route(s, GpuId(0), GpuId(257), EcmpMembership(s.num_links()), first);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->size, 4);
  EXPECT_EQ(direct->links[0], s.nic_up(GpuId(0)));
}

// A spine's 64 down ports reach 64 groups of its rail: 16,384 GPUs fit; 16,640 (65 groups) or three
// tiers are refused by the key's name. Rails need not divide a spine's down ports.
TEST(RailPlanes, TheClusterMustFitOneLeafSpinePerRail) {
  EXPECT_EQ(Topology::build(planes(16384)).tiers(), 2);
  for (const auto& [gpus, tiers] : {std::pair{std::int64_t{16640}, 0}, std::pair{std::int64_t{2048}, 3}}) {
    ClusterParams p = planes(gpus);
    p.tiers = tiers;
    try {
      Topology::build(p);
      ADD_FAILURE() << gpus << " GPUs, tiers " << tiers << " accepted";
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "cluster.rail_planes") << gpus;
    }
  }
  ClusterParams odd = planes(768);
  odd.gpus_per_server = 6;
  odd.rails = 3;
  odd.servers_per_group = 16;  // 2 NICs per server on each rail: 32 per leaf
  EXPECT_NO_THROW(Topology::build(odd));
  odd.rail_planes = false;
  EXPECT_THROW(Topology::build(odd), sim::ConfigError);  // 3 does not divide 64
}

}  // namespace
}  // namespace megasim::topo
