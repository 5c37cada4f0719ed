// Path shapes, ECMP choices and membership filtering, derived from the path table in routing.h.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/rng.h"
#include "topology/routing.h"

namespace megasim::topo {
namespace {

Topology clos12288() {
  ClusterParams p;
  p.gpus = 12288;  // 6 pods, 3 tiers
  return Topology::build(p);
}

std::uint32_t first(NodeId, std::span<const LinkId>) {
  return 0;
}

void expect_connected(const Topology& t, const Path& path, GpuId src, GpuId dst) {
  ASSERT_GT(path.size, 0);
  EXPECT_EQ(t.link(path.links[0]).from, t.gpu_node(src));
  EXPECT_EQ(t.link(path.links[path.size - 1]).to, t.gpu_node(dst));
  for (int i = 0; i + 1 < path.size; ++i) {
    EXPECT_EQ(t.link(path.links[static_cast<std::size_t>(i)]).to,
              t.link(path.links[static_cast<std::size_t>(i + 1)]).from);
  }
}

// GPUs: 0 and 3 share server 0; 0 and 8 share rail ToR (group 0, rail 0); 0 and 9 are in pod 0 on
// different rails; 0 and 12000 are in pods 0 and 5 (server 1500 -> group 23 -> pod 5).
TEST(Route, PathShapes) {
  const Topology t = clos12288();
  const EcmpMembership m(t.num_links());
  const struct {
    int dst;
    int links;
  } cases[] = {{3, 2}, {8, 2}, {9, 4}, {12000, 6}};
  for (const auto& c : cases) {
    const auto path = route(t, GpuId(0), GpuId(c.dst), m, first);
    ASSERT_TRUE(path.has_value());
    EXPECT_EQ(path->size, c.links) << "dst " << c.dst;
    expect_connected(t, *path, GpuId(0), GpuId(c.dst));
  }
  EXPECT_EQ(t.link(route(t, GpuId(0), GpuId(3), m, first)->links[0]).kind, LinkKind::kNvLink);
  EXPECT_EQ(t.link(route(t, GpuId(0), GpuId(8), m, first)->links[0]).kind, LinkKind::kNic);
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(3)), 1);
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(8)), 1);
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(9)), 32);
  EXPECT_EQ(count_equal_cost_paths(t, GpuId(0), GpuId(12000)), 32 * 32);
}

TEST(Route, EveryChoiceGivesAConnectedPath) {
  const Topology t = clos12288();
  const EcmpMembership m(t.num_links());
  std::set<std::pair<int, int>> seen;
  for (std::uint32_t k = 0; k < 32; k += 5) {
    for (std::uint32_t j = 0; j < 32; j += 7) {
      const auto choose = [&](NodeId sw, std::span<const LinkId>) { return t.node(sw).kind == NodeKind::kTor ? k : j; };
      const auto path = route(t, GpuId(17), GpuId(9000), m, choose);
      ASSERT_TRUE(path.has_value());
      expect_connected(t, *path, GpuId(17), GpuId(9000));
      seen.insert({t.node(t.link(path->links[1]).to).plane, t.node(t.link(path->links[2]).to).index % 32});
    }
  }
  EXPECT_EQ(seen.size(), 7u * 5u);
}

TEST(Ecmp, SameTupleSamePath) {
  const Topology t = clos12288();
  const EcmpMembership m(t.num_links());
  const EcmpHasher h(EcmpConfig{});
  const FiveTuple tuple{t.ip_of(GpuId(1)), t.ip_of(GpuId(11000)), roce_source_port(77)};
  const auto a = route_ecmp(t, GpuId(1), GpuId(11000), tuple, h, m);
  const auto b = route_ecmp(t, GpuId(1), GpuId(11000), tuple, EcmpHasher(EcmpConfig{}), m);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

// 10k random source ports over a 32-wide ToR group: each uplink's count is Binomial(10000, 1/32),
// mean 312.5, sd sqrt(10000/32 * 31/32) = 17.4; 6 sd (~104) bounds all 32 with overwhelming odds.
TEST(Ecmp, SourcePortsSpreadOverAllUplinks) {
  const Topology t = clos12288();
  const EcmpMembership m(t.num_links());
  const EcmpHasher h(EcmpConfig{HashFunction::kCrc32, false, 42});
  sim::Rng rng(7);
  std::map<LinkId, int> counts;
  for (int i = 0; i < 10000; ++i) {
    const FiveTuple tuple{t.ip_of(GpuId(0)), t.ip_of(GpuId(9)),
                          roce_source_port(static_cast<std::uint32_t>(rng.next_u64()))};
    const auto path = route_ecmp(t, GpuId(0), GpuId(9), tuple, h, m);
    ASSERT_TRUE(path);
    ++counts[path->links[1]];
  }
  EXPECT_EQ(counts.size(), 32u);
  for (const auto& [link, n] : counts) EXPECT_NEAR(n, 312.5, 6 * 17.4);
}

// Pairs (agg plane chosen at the ToR, core index chosen at the agg) over many tuples.
std::size_t distinct_choice_pairs(const Topology& t, const EcmpHasher& h) {
  const EcmpMembership m(t.num_links());
  std::set<std::pair<int, int>> pairs;
  for (std::uint32_t qp = 0; qp < 10000; ++qp) {
    const FiveTuple tuple{t.ip_of(GpuId(0)), t.ip_of(GpuId(12000)), roce_source_port(qp)};
    const auto path = route_ecmp(t, GpuId(0), GpuId(12000), tuple, h, m);
    pairs.insert({t.node(t.link(path->links[1]).to).plane, t.node(t.link(path->links[2]).to).index % 32});
  }
  return pairs.size();
}

TEST(Ecmp, PolarizedHashingCorrelatesTiers) {
  const Topology t = clos12288();
  // Same seed and function at ToR and agg, both groups 32 wide: the agg repeats the ToR's choice.
  EXPECT_EQ(distinct_choice_pairs(t, EcmpHasher(EcmpConfig{HashFunction::kCrc32, true, 5})), 32u);
  // Per-switch seeds: 10k tuples over 1024 pairs cover nearly all (expected missing 1024 e^-9.8 < 1).
  EXPECT_GT(distinct_choice_pairs(t, EcmpHasher(EcmpConfig{HashFunction::kCrc32, false, 5})), 1000u);
}

TEST(Membership, RemoveAndRestoreAreIdempotent) {
  EcmpMembership m(10);
  EXPECT_TRUE(m.all_members());
  m.remove(LinkId(3));
  m.remove(LinkId(3));
  EXPECT_FALSE(m.contains(LinkId(3)));
  m.restore(LinkId(3));
  EXPECT_TRUE(m.all_members());
  m.restore(LinkId(3));
  EXPECT_TRUE(m.all_members());
  EXPECT_TRUE(m.contains(LinkId(3)));
}

TEST(Membership, RemovedUplinkIsNeverUsed) {
  const Topology t = clos12288();
  EcmpMembership m(t.num_links());
  const LinkId dead = t.up_links(t.tor_of(GpuId(0)))[4];
  m.remove(dead);
  const EcmpHasher h(EcmpConfig{});
  for (std::uint32_t qp = 0; qp < 2000; ++qp) {
    for (const int dst : {9, 12000}) {
      const FiveTuple tuple{t.ip_of(GpuId(0)), t.ip_of(GpuId(dst)), roce_source_port(qp)};
      const auto path = route_ecmp(t, GpuId(0), GpuId(dst), tuple, h, m);
      ASSERT_TRUE(path);
      expect_connected(t, *path, GpuId(0), GpuId(dst));
      EXPECT_NE(path->links[1], dead);
    }
  }
  EXPECT_EQ(spray_usage(t, GpuId(0), GpuId(9), m).size(), 2u + 2u * 31u);
}

// A dead down link agg(dst pod, k) -> dst ToR removes plane k from the ToR's candidates, and a
// dead core -> dst-pod link removes that core from the source agg's candidates.
TEST(Membership, DownstreamFailuresFilterUpstreamChoices) {
  const Topology t = clos12288();
  EcmpMembership m(t.num_links());
  const NodeId dst_tor = t.tor_of(GpuId(12000));
  m.remove(t.agg_down_link(t.agg(5, 3), dst_tor));
  const NodeId core = t.link(t.up_links(t.agg(0, 6))[9]).to;
  m.remove(t.core_down_link(core, 5));
  const EcmpHasher h(EcmpConfig{});
  for (std::uint32_t qp = 0; qp < 4000; ++qp) {
    const FiveTuple tuple{t.ip_of(GpuId(0)), t.ip_of(GpuId(12000)), roce_source_port(qp)};
    const auto path = route_ecmp(t, GpuId(0), GpuId(12000), tuple, h, m);
    ASSERT_TRUE(path);
    for (const LinkId l : path->view()) EXPECT_TRUE(m.contains(l));
  }
}

TEST(Membership, ToRWithoutUplinksCannotLeave) {
  const Topology t = clos12288();
  EcmpMembership m(t.num_links());
  for (const LinkId l : t.up_links(t.tor_of(GpuId(0)))) m.remove(l);
  const EcmpHasher h(EcmpConfig{});
  const FiveTuple tuple{t.ip_of(GpuId(0)), t.ip_of(GpuId(9)), roce_source_port(1)};
  EXPECT_FALSE(route_ecmp(t, GpuId(0), GpuId(9), tuple, h, m).has_value());
  EXPECT_FALSE(route_ecmp(t, GpuId(0), GpuId(12000), tuple, h, m).has_value());
  EXPECT_TRUE(spray_usage(t, GpuId(0), GpuId(12000), m).empty());
  // Same ToR and same server need no uplink.
  EXPECT_TRUE(route_ecmp(t, GpuId(0), GpuId(8), tuple, h, m).has_value());
  EXPECT_TRUE(route_ecmp(t, GpuId(0), GpuId(1), tuple, h, m).has_value());
}

// A dead fixed down link is still the route (it is the only way): only choices are filtered.
TEST(Membership, FixedLinksAreKeptEvenWhenRemoved) {
  const Topology t = clos12288();
  EcmpMembership m(t.num_links());
  m.remove(t.nic_down(GpuId(8)));
  const auto path = route(t, GpuId(0), GpuId(8), m, first);
  ASSERT_TRUE(path);
  EXPECT_EQ(path->links[1], t.nic_down(GpuId(8)));
}

std::map<LinkKind, double> weight_per_kind_up(const Topology& t, const std::vector<WeightedLink>& usage,
                                              LinkDirection dir) {
  std::map<LinkKind, double> sums;
  for (const auto& w : usage) {
    if (t.link(w.link).direction == dir) sums[t.link(w.link).kind] += w.weight;
  }
  return sums;
}

TEST(Spray, WeightsPerTierSumToOne) {
  const Topology t = clos12288();
  EcmpMembership m(t.num_links());
  for (const int dst : {9, 12000}) {
    const auto usage = spray_usage(t, GpuId(0), GpuId(dst), m);
    for (const auto dir : {LinkDirection::kUp, LinkDirection::kDown}) {
      for (const auto& [kind, sum] : weight_per_kind_up(t, usage, dir)) EXPECT_NEAR(sum, 1.0, 1e-12);
    }
    std::set<LinkId> distinct;
    for (const auto& w : usage) {
      distinct.insert(w.link);
      if (t.link(w.link).kind == LinkKind::kTorAgg && t.link(w.link).direction == LinkDirection::kUp) {
        EXPECT_DOUBLE_EQ(w.weight, 1.0 / 32);  // 1 / u_t on each ToR uplink
      }
      if (t.link(w.link).kind == LinkKind::kAggCore) {
        EXPECT_DOUBLE_EQ(w.weight, 1.0 / (32 * 32));
      }
    }
    EXPECT_EQ(distinct.size(), usage.size());  // merged: each link once
  }
  // With one ToR uplink gone, the 31 others carry 1/31 each.
  m.remove(t.up_links(t.tor_of(GpuId(0)))[0]);
  for (const auto& w : spray_usage(t, GpuId(0), GpuId(12000), m)) {
    if (t.link(w.link).kind == LinkKind::kTorAgg && t.link(w.link).direction == LinkDirection::kUp) {
      EXPECT_DOUBLE_EQ(w.weight, 1.0 / 31);
    }
  }
}

}  // namespace
}  // namespace megasim::topo
