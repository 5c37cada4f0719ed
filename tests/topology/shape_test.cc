// Node and link counts of built Clos fabrics, derived by hand from the shape in cluster_params.h,
// and structural invariants of the graph.
#include <gtest/gtest.h>

#include <chrono>

#include "topology/graph.h"
#include "topology/topology.h"

namespace megasim::topo {
namespace {

std::size_t count(const Topology& t, NodeKind k) {
  return t.nodes_of(k).size();
}

std::int64_t count_links(const Topology& t, LinkKind k) {
  std::int64_t n = 0;
  for (const Link& l : t.links()) n += l.kind == k ? 1 : 0;
  return n;
}

TEST(Shape, MegaScaleDefaultAt1024Gpus) {
  const Topology t = Topology::build(ClusterParams{});
  // 1024 GPUs / 8 per server = 128 servers; / 64 per group = 2 groups; x 8 rails = 16 ToRs.
  // A pod holds radix/2 = 32 ToRs = 4 groups, so one pod: tiers auto -> 2, no cores.
  // Aggs per pod = ToR uplinks = (64/2) / 1 = 32.
  EXPECT_EQ(t.tiers(), 2);
  EXPECT_EQ(t.num_servers(), 128);
  EXPECT_EQ(t.num_groups(), 2);
  EXPECT_EQ(t.num_pods(), 1);
  EXPECT_EQ(t.tor_uplinks(), 32);
  EXPECT_EQ(count(t, NodeKind::kGpu), 1024u);
  EXPECT_EQ(count(t, NodeKind::kNvSwitch), 128u);
  EXPECT_EQ(count(t, NodeKind::kTor), 16u);
  EXPECT_EQ(count(t, NodeKind::kAgg), 32u);
  EXPECT_EQ(count(t, NodeKind::kCore), 0u);
  EXPECT_EQ(t.num_nodes(), 1024u + 128 + 16 + 32);
  // Cables: 1024 NVLink + 1024 NIC + 16 ToRs x 32 uplinks = 512 ToR-agg; two directed links each.
  EXPECT_EQ(count_links(t, LinkKind::kNvLink), 2 * 1024);
  EXPECT_EQ(count_links(t, LinkKind::kNic), 2 * 1024);
  EXPECT_EQ(count_links(t, LinkKind::kTorAgg), 2 * 512);
  EXPECT_EQ(count_links(t, LinkKind::kAggCore), 0);
  EXPECT_TRUE(t.up_links(t.agg(0, 0)).empty());
}

TEST(Shape, ThreeTiersAt12288Gpus) {
  ClusterParams p;
  p.gpus = 12288;
  const Topology t = Topology::build(p);
  // 12288 / 8 = 1536 servers; / 64 = 24 groups; 4 groups per pod -> 6 pods (> 1, so 3 tiers).
  // ToRs = 24 x 8 = 192; aggs = 6 pods x 32 = 192; agg uplinks = 32 / 1 = 32, so cores =
  // 32 planes x 32 = 1024, each with one link per pod (6 <= 64 ports).
  EXPECT_EQ(t.tiers(), 3);
  EXPECT_EQ(t.num_pods(), 6);
  EXPECT_EQ(t.num_groups(), 24);
  EXPECT_EQ(count(t, NodeKind::kTor), 192u);
  EXPECT_EQ(count(t, NodeKind::kAgg), 192u);
  EXPECT_EQ(count(t, NodeKind::kCore), 1024u);
  // Cables: ToR-agg 192 x 32 = 6144; agg-core 192 x 32 = 6144 (= 1024 cores x 6 pods).
  EXPECT_EQ(count_links(t, LinkKind::kTorAgg), 2 * 6144);
  EXPECT_EQ(count_links(t, LinkKind::kAggCore), 2 * 6144);
  EXPECT_EQ(t.num_links(), static_cast<std::size_t>(4 * 12288 + 2 * 6144 + 2 * 6144));
  for (const NodeId c : t.nodes_of(NodeKind::kCore)) {
    EXPECT_EQ(boost::in_degree(c.index(), t.graph()), 6u);
  }
}

TEST(Shape, OneServer) {
  ClusterParams p;
  p.gpus = 8;
  const Topology t = Topology::build(p);
  // 1 server -> 1 (partial) group -> 8 rail ToRs in 1 pod, still 32 aggs; 2 tiers.
  EXPECT_EQ(t.tiers(), 2);
  EXPECT_EQ(count(t, NodeKind::kNvSwitch), 1u);
  EXPECT_EQ(count(t, NodeKind::kTor), 8u);
  EXPECT_EQ(count(t, NodeKind::kAgg), 32u);
  EXPECT_EQ(t.num_links(), static_cast<std::size_t>(4 * 8 + 2 * 8 * 32));
}

TEST(Shape, TorOversubscriptionHalvesUplinks) {
  ClusterParams p;
  p.tor_oversubscription = 2;
  const Topology t = Topology::build(p);
  // (64/2) / 2 = 16 uplinks per ToR = 16 aggs per pod; 16 ToRs x 16 = 256 cables.
  EXPECT_EQ(t.tor_uplinks(), 16);
  EXPECT_EQ(count(t, NodeKind::kAgg), 16u);
  EXPECT_EQ(count_links(t, LinkKind::kTorAgg), 2 * 256);
  EXPECT_EQ(t.up_links(t.tor_of(GpuId(0))).size(), 16u);
}

TEST(Shape, ExplicitThreeTiersOnOnePod) {
  ClusterParams p;
  p.tiers = 3;
  const Topology t = Topology::build(p);
  // One pod, but cores are built: 32 x 32 = 1024 cores with one link each.
  EXPECT_EQ(t.tiers(), 3);
  EXPECT_EQ(count(t, NodeKind::kCore), 1024u);
  EXPECT_EQ(count_links(t, LinkKind::kAggCore), 2 * 1024);
}

TEST(Shape, LinksAreConsistent) {
  ClusterParams p;
  p.gpus = 4096 + 8;  // 3 pods, the last holding one server
  const Topology t = Topology::build(p);
  EXPECT_EQ(t.num_pods(), 3);
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const Link& l = t.links()[i];
    const Link& r = t.link(l.reverse);
    EXPECT_EQ(t.link(r.reverse).from, l.from);
    EXPECT_EQ(r.from, l.to);
    EXPECT_EQ(r.to, l.from);
    EXPECT_EQ(r.kind, l.kind);
    EXPECT_NE(r.direction, l.direction);
  }
  // The Boost graph carries the same edges, edge_index = LinkId.
  const auto index = boost::get(boost::edge_index, t.graph());
  std::size_t edges = 0;
  for (auto [it, end] = boost::edges(t.graph()); it != end; ++it, ++edges) {
    const Link& l = t.link(LinkId(index[*it]));
    EXPECT_EQ(boost::source(*it, t.graph()), l.from.index());
    EXPECT_EQ(boost::target(*it, t.graph()), l.to.index());
  }
  EXPECT_EQ(edges, t.num_links());
}

TEST(Shape, GpuAccessors) {
  ClusterParams p;
  p.gpus = 4096;
  const Topology t = Topology::build(p);
  const GpuId g(8 * 70 + 5);  // server 70 = group 1 of pod 0, local index 5 -> rail 5
  EXPECT_EQ(t.server_of(g), ServerId(70));
  EXPECT_EQ(t.local_index(g), 5);
  EXPECT_EQ(t.rail_of(g), 5);
  EXPECT_EQ(t.group_of(ServerId(70)), 1);
  EXPECT_EQ(t.pod_of(ServerId(300)), 1);  // group 4
  const Node& tor = t.node(t.tor_of(g));
  EXPECT_EQ(tor.kind, NodeKind::kTor);
  EXPECT_EQ(tor.group, 1);
  EXPECT_EQ(tor.rail, 5);
  const Link& nic = t.link(t.nic_up(g));
  EXPECT_EQ(nic.from, t.gpu_node(g));
  EXPECT_EQ(nic.to, t.tor_of(g));
  EXPECT_EQ(nic.kind, LinkKind::kNic);
  EXPECT_DOUBLE_EQ(nic.capacity_gbps, 200);
  EXPECT_EQ(t.link(t.nic_down(g)).reverse, t.nic_up(g));
  const Link& nv = t.link(t.nvlink_up(g));
  EXPECT_EQ(nv.to, t.nvswitch_of(ServerId(70)));
  EXPECT_DOUBLE_EQ(nv.capacity_gbps, 300 * 8);  // 300 GB/s each way
  EXPECT_EQ(nv.latency_ns, 300);
  EXPECT_EQ(t.link(t.nvlink_down(g)).to, t.gpu_node(g));
  // ip: 10.0.0.1 + g, unique.
  EXPECT_EQ(t.ip_of(GpuId(0)), 0x0A000001u);
  EXPECT_NE(t.ip_of(GpuId(1)), t.ip_of(GpuId(2)));
}

TEST(Shape, SwitchAccessors) {
  ClusterParams p;
  p.gpus = 12288;
  const Topology t = Topology::build(p);
  const NodeId tor = t.tor_of(GpuId(5000));  // server 625 -> group 9 -> pod 2
  const auto ups = t.up_links(tor);
  ASSERT_EQ(ups.size(), 32u);
  for (int k = 0; k < 32; ++k) {
    const Link& l = t.link(ups[static_cast<std::size_t>(k)]);
    EXPECT_EQ(l.from, tor);
    EXPECT_EQ(l.to, t.agg(2, k));
    EXPECT_EQ(t.agg_down_link(t.agg(2, k), tor), l.reverse);
  }
  const NodeId a = t.agg(4, 7);
  const auto aups = t.up_links(a);
  ASSERT_EQ(aups.size(), 32u);
  for (int j = 0; j < 32; ++j) {
    const Link& l = t.link(aups[static_cast<std::size_t>(j)]);
    EXPECT_EQ(t.node(l.to).kind, NodeKind::kCore);
    EXPECT_EQ(t.node(l.to).plane, 7);
    EXPECT_EQ(t.core_down_link(l.to, 4), l.reverse);
  }
  EXPECT_TRUE(t.up_links(t.nodes_of(NodeKind::kCore)[0]).empty());
}

// 131072 GPUs is the default fabric's maximum: 64 pods x 32 ToRs / 8 rails x 64 servers x 8 GPUs.
TEST(Shape, BuildsTheLargestCluster) {
  ClusterParams p;
  p.gpus = 131072;
  const auto start = std::chrono::steady_clock::now();
  const Topology t = Topology::build(p);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.num_pods(), 64);
  // 2048 ToRs, 64 x 32 = 2048 aggs, 1024 cores each with 64 down links (one per pod: its full radix).
  EXPECT_EQ(count(t, NodeKind::kTor), 2048u);
  EXPECT_EQ(count(t, NodeKind::kAgg), 2048u);
  EXPECT_EQ(boost::in_degree(t.nodes_of(NodeKind::kCore)[0].index(), t.graph()), 64u);
  EXPECT_EQ(t.num_links(), static_cast<std::size_t>(4 * 131072 + 2 * 2048 * 32 + 2 * 2048 * 32));
  RecordProperty("build_seconds", std::to_string(seconds));
  EXPECT_LT(seconds, 10.0);  // loose bound for a loaded CI machine; typical is well under 1 s
}

TEST(Shape, BuildsOneHundredThousandGpus) {
  ClusterParams p;
  p.gpus = 100000;  // a multiple of 8: 12500 servers, 196 groups (the last with 20 servers), 49 pods
  const Topology t = Topology::build(p);
  EXPECT_EQ(t.num_groups(), 196);
  EXPECT_EQ(t.num_pods(), 49);
  EXPECT_EQ(t.node(t.tor_of(GpuId(99999))).group, 195);
}

}  // namespace
}  // namespace megasim::topo
