// summarize(), bisection, JSON/GraphViz output and placement.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <sstream>

#include "sim/error.h"
#include "topology/placement.h"
#include "topology/summary.h"

namespace megasim::topo {
namespace {

ClusterParams with_gpus(std::int64_t gpus) {
  ClusterParams p;
  p.gpus = gpus;
  return p;
}

TEST(Summary, MegaScaleDefault) {
  const TopologySummary s = summarize(Topology::build(ClusterParams{}));
  EXPECT_EQ(s.tiers, 2);
  EXPECT_EQ(s.servers, 128);
  EXPECT_EQ(s.nvswitches, 128);
  EXPECT_EQ(s.tors, 16);
  EXPECT_EQ(s.aggs, 32);
  EXPECT_EQ(s.cores, 0);
  ASSERT_EQ(s.link_tiers.size(), 3u);  // no agg-core tier with two tiers
  EXPECT_EQ(s.link_tiers[0].name, "nvlink");
  EXPECT_EQ(s.link_tiers[0].cables, 1024);
  EXPECT_DOUBLE_EQ(s.link_tiers[0].gbps_each_way, 2400);  // 300 GB/s x 8
  EXPECT_EQ(s.link_tiers[1].cables, 1024);
  EXPECT_DOUBLE_EQ(s.link_tiers[1].total_tbps_up, 1024 * 200 / 1000.0);
  EXPECT_EQ(s.link_tiers[2].cables, 16 * 32);
  EXPECT_DOUBLE_EQ(s.link_tiers[2].total_tbps_up, 16 * 32 * 400 / 1000.0);
  // ToR: 64 NICs x 200 down = 12.8 Tb/s vs 32 x 400 up = 12.8 Tb/s.
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 0.0);
  // Halves = groups 0 | 1; each group's 8 ToRs have 32 x 400 up = all of their 64 x 200 NICs.
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 1.0);
  EXPECT_DOUBLE_EQ(s.bisection_tbps, 512 * 200 / 1000.0);
}

TEST(Summary, ThreeTiersFullBisection) {
  const TopologySummary s = summarize(Topology::build(with_gpus(12288)));
  EXPECT_EQ(s.cores, 1024);
  ASSERT_EQ(s.link_tiers.size(), 4u);
  EXPECT_EQ(s.link_tiers[3].cables, 192 * 32);
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 1.0);  // 32 ToR links x 400 down vs 32 x 400 up per agg
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 1.0);
}

TEST(Summary, TwoToOneAtTheTor) {
  ClusterParams p;
  p.tor_oversubscription = 2;
  const TopologySummary s = summarize(Topology::build(p));
  // 64 x 200 down vs 16 x 400 up.
  EXPECT_DOUBLE_EQ(s.tor_oversubscription, 2.0);
  // Group 0's ToRs can push only 8 x 16 x 400 = 51.2 Tb/s of 512 x 200 = 102.4.
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 0.5);
}

TEST(Summary, TwoToOneAtTheAgg) {
  ClusterParams p = with_gpus(8192);  // 4 pods
  p.agg_oversubscription = 2;
  const TopologySummary s = summarize(Topology::build(p));
  EXPECT_DOUBLE_EQ(s.agg_oversubscription, 2.0);
  // Pods 0-1 | 2-3: each pod's aggs send 32 x 16 x 400 = 204.8 Tb/s of its 2048 x 200 = 409.6.
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 0.5);
}

TEST(Summary, OneServerBisectsAcrossRails) {
  // GPUs 0-3 | 4-7 sit on 8 distinct rail ToRs and meet through the aggs: full bisection.
  const TopologySummary s = summarize(Topology::build(with_gpus(8)));
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 1.0);
  ClusterParams one;
  one.gpus = one.gpus_per_server = one.rails = 1;
  EXPECT_DOUBLE_EQ(summarize(Topology::build(one)).bisection_ratio, 0.0);
}

// The closed form in bisection.cc against Boost's max flow, on shapes that exercise every term:
// partial groups and pods, odd server counts, oversubscription at either tier, a narrow radix.
TEST(Bisection, FormulaEqualsMaxFlow) {
  std::vector<ClusterParams> shapes;
  for (const std::int64_t gpus : {8, 24, 1024, 1536, 2056, 6144, 10248, 16384}) shapes.push_back(with_gpus(gpus));
  ClusterParams a = with_gpus(8200);
  a.tor_oversubscription = 4;
  ClusterParams b = with_gpus(10000);
  b.agg_oversubscription = 2;
  ClusterParams c = with_gpus(2000);  // radix 16: 8 ToRs = 2 groups of 8 servers per pod; 16 pods
  c.switch_radix = 16, c.servers_per_group = 8, c.rails = 4, c.gpus_per_server = 8, c.agg_oversubscription = 4;
  ClusterParams d = with_gpus(4104);
  d.tor_oversubscription = 2, d.agg_oversubscription = 8, d.nic_gbps = 100;
  shapes.insert(shapes.end(), {a, b, c, d});
  for (const ClusterParams& p : shapes) {
    const Topology t = Topology::build(p);
    EXPECT_NEAR(bisection_gbps_formula(t), bisection_gbps_max_flow(t), 1e-6) << p.gpus << " GPUs";
  }
}

TEST(Bisection, LargestClusterIsFullBisection) {
  const TopologySummary s = summarize(Topology::build(with_gpus(131072)));
  EXPECT_DOUBLE_EQ(s.bisection_ratio, 1.0);
  EXPECT_DOUBLE_EQ(s.bisection_tbps, 65536 * 200 / 1000.0);
}

TEST(Export, JsonHasEveryNodeAndLink) {
  const Topology t = Topology::build(with_gpus(16));
  std::ostringstream out;
  write_json(t, out);
  const std::string json = out.str();
  for (const char* key : {"\"params\":{", "\"summary\":{", "\"nodes\":[", "\"links\":[", "\"bisection_ratio\":1",
                          "\"link_tiers\":[", "\"kind\":\"tor\"", "\"direction\":\"down\"", "\"latency_ns\":600"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  auto occurrences = [&](const std::string& s) {
    std::size_t n = 0;
    for (std::size_t pos = json.find(s); pos != std::string::npos; pos = json.find(s, pos + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences("\"plane\":"), t.num_nodes());
  EXPECT_EQ(occurrences("\"gbps\":"), t.num_links());
  EXPECT_EQ(occurrences("{"), occurrences("}"));
  EXPECT_EQ(occurrences("["), occurrences("]"));
}

TEST(Export, GraphvizLabelsAndRefusal) {
  const Topology small = Topology::build(with_gpus(16));
  std::ostringstream out;
  write_graphviz(small, out);
  const std::string dot = out.str();
  EXPECT_EQ(dot.rfind("digraph G {\n", 0), 0u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  EXPECT_NE(dot.find("tor p0 g0 r3"), std::string::npos);
  // A node statement per node, an edge statement per link, each on its own line; the first link's
  // ends are its nodes' numbers.
  const auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto at = dot.find(s); at != std::string::npos; at = dot.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("[label=\""), small.num_nodes());
  EXPECT_EQ(count("->"), small.num_links());
  EXPECT_EQ(count("\n"), small.num_nodes() + small.num_links() + 2);
  const Link& first = small.links().front();
  EXPECT_NE(dot.find(fmt::format("\n{}->{};\n", first.from.value, first.to.value)), std::string::npos);
  out.str("");
  const Topology big = Topology::build(with_gpus(1024));
  try {
    write_graphviz(big, out, 512);
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "topo.graphviz");
    EXPECT_NE(std::string(e.what()).find("512"), std::string::npos);
  }
}

TEST(Placement, ContiguousAndBounded) {
  const Topology t = Topology::build(ClusterParams{});
  const Placement p = contiguous_placement(t, 64);
  ASSERT_EQ(p.size(), 64u);
  for (std::size_t r = 0; r < p.size(); ++r) EXPECT_EQ(p[r], GpuId(static_cast<std::int32_t>(r)));
  // Ranks 0-7 (a TP group of 8) share server 0.
  EXPECT_EQ(t.server_of(p[7]), t.server_of(p[0]));
  try {
    (void)contiguous_placement(t, 2048);
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpus");
    EXPECT_NE(std::string(e.what()).find("2048"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("1024"), std::string::npos);
  }
  EXPECT_THROW((void)contiguous_placement(t, 0), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::topo
