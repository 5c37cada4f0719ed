// A Clos whose aggregation switches have more ports than its ToRs and cores (cluster.agg_switch_radix):
// Llama 3's fabric (Dubey et al. 2024, §3.3.1; ../shared/calibration/modern_setup.md), 16 GPUs in two
// servers under each ToR, 192 ToRs (3,072 GPUs) per pod at full bisection, pods joined at about 1:7,
// one NIC per GPU (not rail-optimised). Counts derived by hand from the shape in cluster_params.h.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/error.h"
#include "topology/ecmp.h"
#include "topology/routing.h"
#include "topology/summary.h"
#include "topology/topology.h"

namespace megasim::topo {
namespace {

ClusterParams llama3_fabric(std::int64_t gpus) {
  ClusterParams p;
  p.gpus = gpus;
  p.gpus_per_server = 8;
  p.rails = 1;
  p.nic_gbps = 400;
  p.switch_port_gbps = 400;
  p.switch_radix = 32;  // ToR: 16 NICs down, 16 uplinks
  p.tor_downlink_split = 1;
  p.servers_per_group = 2;
  p.agg_switch_radix = 384;             // 192 ToRs down: a 3,072-GPU pod
  p.agg_oversubscription = 192.0 / 27;  // 27 uplinks: 1:7.1, the whole number nearest 1:7
  return p;
}

std::uint32_t first(NodeId, std::span<const LinkId>) {
  return 0;
}

// 16,384 GPUs = 2,048 servers = 1,024 ToRs (one per two servers, rails 1); 192 per pod: 5 full pods
// and one of 64 ToRs. Aggs = 6 pods x 16 (a ToR's uplinks) = 96, each with 27 uplinks; cores =
// 16 planes x 27 = 432, each with one link per pod.
TEST(AggRadix, Llama3FabricHasItsPodsAndTiers) {
  const Topology t = Topology::build(llama3_fabric(16384));
  EXPECT_EQ(t.tiers(), 3);
  EXPECT_EQ(t.tors_per_pod(), 192);
  EXPECT_EQ(t.num_pods(), 6);
  EXPECT_EQ(t.tor_uplinks(), 16);
  EXPECT_EQ(t.agg_uplinks(), 27);
  EXPECT_EQ(t.nodes_of(NodeKind::kTor).size(), 1024u);
  EXPECT_EQ(t.nodes_of(NodeKind::kAgg).size(), 96u);
  EXPECT_EQ(t.nodes_of(NodeKind::kCore).size(), 432u);
  // GPU 3,071 is the last of pod 0, 3,072 the first of pod 1.
  EXPECT_EQ(t.pod_of(t.server_of(GpuId(3071))), 0);
  EXPECT_EQ(t.pod_of(t.server_of(GpuId(3072))), 1);
  const TopologySummary s = summarize(t);
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 1.0);
  // Down: 1,024 ToRs x 16 ToR-agg links; up: 96 aggs x 27.
  EXPECT_NEAR(s.agg_oversubscription, 1024.0 * 16 / (96.0 * 27), 1e-12);
}

// Not rail-optimised: every GPU of a ToR's 16 reaches the others through the one ToR; a pod's
// ToRs through any of the 16 aggregation planes; another pod through 16 x 27 core paths.
TEST(AggRadix, Llama3FabricRoutesInsideAndAcrossPods) {
  const Topology t = Topology::build(llama3_fabric(16384));
  const EcmpMembership m(t.num_links());
  const struct {
    int dst, links;
    std::int64_t paths;
  } cases[] = {{3, 2, 1}, {15, 2, 1}, {16, 4, 16}, {3071, 4, 16}, {3072, 6, 16 * 27}, {16383, 6, 16 * 27}};
  for (const auto& c : cases) {
    const auto path = route(t, GpuId(0), GpuId(c.dst), m, first);
    ASSERT_TRUE(path.has_value()) << c.dst;
    EXPECT_EQ(path->size, c.links) << "dst " << c.dst;
    EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(c.dst)), c.paths) << "dst " << c.dst;
  }
}

TEST(AggRadix, BadAggregationRadixNamesItsKey) {
  for (const int radix : {2, 5, 1026}) {
    ClusterParams p = llama3_fabric(16384);
    p.agg_switch_radix = radix;
    try {
      Topology::build(p);
      ADD_FAILURE() << "agg_switch_radix " << radix << " accepted";
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "cluster.agg_switch_radix");
    }
  }
  // 1:7 exactly is no whole number of uplinks of 192 down ports.
  ClusterParams p = llama3_fabric(16384);
  p.agg_oversubscription = 7;
  try {
    Topology::build(p);
    ADD_FAILURE() << "1:7 accepted";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.agg_oversubscription");
    EXPECT_NE(std::string(e.what()).find("agg_switch_radix/2"), std::string::npos) << e.what();
  }
}

// A zero aggregation radix is the one-radix Clos, node for node.
TEST(AggRadix, ZeroIsTheSwitchRadix) {
  ClusterParams p;
  p.gpus = 12288;
  ClusterParams q = p;
  q.agg_switch_radix = p.switch_radix;
  const Topology a = Topology::build(p), b = Topology::build(q);
  EXPECT_EQ(a.num_nodes(), b.num_nodes());
  EXPECT_EQ(a.num_links(), b.num_links());
  EXPECT_EQ(a.num_pods(), b.num_pods());
}

}  // namespace
}  // namespace megasim::topo
