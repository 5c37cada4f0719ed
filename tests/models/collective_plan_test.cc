// Flat and hierarchical ring plans, names and parameter errors. Expected values are the ring
// formulas of nccl-tests doc/PERFORMANCE.md worked out by hand for the sizes used.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "collective_test_util.h"
#include "models/collective.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

using testing::blocked;
using testing::sent_bytes;
using testing::server_of;

constexpr double kMiB = 1024.0 * 1024.0;

CollectivePlan plan(CollectiveOp op, const std::vector<std::int64_t>& servers, double bytes = kMiB,
                    CollectiveParams params = {}) {
  return plan_collective(op, CollectiveAlgorithm::kRing, bytes, servers, params);
}

// Ring c over 0..n-1 in order, wrapping when `wrap`.
void expect_ring(const CommChannel& channel, std::int32_t n, bool wrap) {
  const std::int32_t edges = wrap ? n : n - 1;
  ASSERT_EQ(channel.edges.size(), static_cast<std::size_t>(edges));
  for (std::int32_t i = 0; i < edges; ++i) {
    EXPECT_EQ(channel.edges[static_cast<std::size_t>(i)].src, i);
    EXPECT_EQ(channel.edges[static_cast<std::size_t>(i)].dst, (i + 1) % n);
  }
}

TEST(CollectivePlan, FlatAllReduceOfOneMiBOverFour) {
  const CollectivePlan p = plan(CollectiveOp::kAllReduce, blocked(4, 1));  // one member per server
  ASSERT_EQ(p.phases.size(), 1u);
  const CommPhase& phase = p.phases[0];
  ASSERT_EQ(phase.channels.size(), 2u);  // default channels = 2
  EXPECT_EQ(phase.steps, 6);             // 2(n-1)
  EXPECT_TRUE(phase.crosses_network);
  for (std::size_t c = 0; c < 2; ++c) {
    expect_ring(phase.channels[c], 4, true);
    EXPECT_DOUBLE_EQ(phase.channels[c].bytes_per_edge, 786432.0);  // 2*3/4 * 2^20 / 2 = 1.5 * 2^19
  }
  EXPECT_NE(phase.channels[0].connection, phase.channels[1].connection);
}

TEST(CollectivePlan, FlatReduceScatterAllGatherBroadcast) {
  for (CollectiveOp op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    const CollectivePlan p = plan(op, blocked(4, 1));
    ASSERT_EQ(p.phases.size(), 1u);
    EXPECT_EQ(p.phases[0].steps, 3);  // n-1
    expect_ring(p.phases[0].channels[0], 4, true);
    EXPECT_DOUBLE_EQ(p.phases[0].channels[0].bytes_per_edge, 393216.0);  // 3/4 * 2^20 / 2 = 0.75 * 2^19
  }
  const CollectivePlan b = plan(CollectiveOp::kBroadcast, blocked(4, 1));
  EXPECT_EQ(b.phases[0].steps, 3);
  ASSERT_EQ(b.phases[0].channels.size(), 2u);
  expect_ring(b.phases[0].channels[1], 4, false);                      // chain from the root, no wrap
  EXPECT_DOUBLE_EQ(b.phases[0].channels[1].bytes_per_edge, 524288.0);  // S / C
}

TEST(CollectivePlan, AllToAllIsEveryOrderedPairAtOnce) {
  const CollectivePlan p = plan(CollectiveOp::kAllToAll, blocked(1, 4));
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].steps, 1);
  EXPECT_FALSE(p.phases[0].crosses_network);  // all on one server
  std::set<std::pair<std::int32_t, std::int32_t>> pairs;
  for (const CommChannel& c : p.phases[0].channels) {
    ASSERT_EQ(c.edges.size(), 1u);
    EXPECT_DOUBLE_EQ(c.bytes_per_edge, kMiB / 4);  // each peer gets S/n
    EXPECT_NE(c.edges[0].src, c.edges[0].dst);
    pairs.insert({c.edges[0].src, c.edges[0].dst});
  }
  EXPECT_EQ(p.phases[0].channels.size(), 12u);
  EXPECT_EQ(pairs.size(), 12u);  // n(n-1) distinct ordered pairs
}

TEST(CollectivePlan, SendRecvSplitsOverChannels) {
  CollectiveParams params;
  params.channels = 4;
  const CollectivePlan p = plan(CollectiveOp::kSendRecv, blocked(2, 1), kMiB, params);
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].steps, 1);
  std::set<std::uint32_t> connections;
  for (const CommChannel& c : p.phases[0].channels) {
    ASSERT_EQ(c.edges.size(), 1u);
    EXPECT_EQ(c.edges[0].src, 0);
    EXPECT_EQ(c.edges[0].dst, 1);
    EXPECT_DOUBLE_EQ(c.bytes_per_edge, kMiB / 4);
    connections.insert(c.connection);
  }
  EXPECT_EQ(connections.size(), 4u);
}

TEST(CollectivePlan, OneMemberHasNoPhases) {
  const CollectivePlan p = plan(CollectiveOp::kAllReduce, blocked(1, 1));
  EXPECT_TRUE(p.phases.empty());
  EXPECT_EQ(p.latency_ns(CollectiveParams{}), CollectiveParams{}.base_latency_ns);
}

// nccl-tests: a ring all-reduce sends 2(n-1)/n*S per rank, reduce-scatter and all-gather (n-1)/n*S.
TEST(CollectivePlan, BytesPerRankMatchNcclTestsFlatAndHierarchical) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{5, 1}, {1, 6}, {2, 8}, {3, 4}, {4, 2}};
  for (const auto& [m, k] : shapes) {
    const double n = static_cast<double>(m * k), s = 3.0 * kMiB;
    for (bool hierarchical : {false, true}) {
      CollectiveParams params;
      params.hierarchical = hierarchical;
      params.channels = 3;
      const auto servers = blocked(m, k);
      for (const auto& [op, factor] :
           {std::pair{CollectiveOp::kAllReduce, 2.0}, std::pair{CollectiveOp::kReduceScatter, 1.0},
            std::pair{CollectiveOp::kAllGather, 1.0}}) {
        for (double sent : sent_bytes(plan(op, servers, s, params))) {
          EXPECT_NEAR(sent, factor * (n - 1) / n * s, 1e-6 * s) << m << "x" << k << " " << to_string(op);
        }
      }
    }
  }
}

// Hierarchical all-reduce puts 2(m-1)/m*S/k on every rank's NIC. A flat ring over the same block
// layout leaves a server only from its last member, which puts the whole 2(n-1)/n*S on that NIC.
TEST(CollectivePlan, HierarchicalNetworkBytesPerRank) {
  const std::int64_t m = 4, k = 8;
  const double n = static_cast<double>(m * k), s = kMiB;
  const auto servers = blocked(m, k);
  for (double sent : sent_bytes(plan(CollectiveOp::kAllReduce, servers, s), &servers)) {
    EXPECT_NEAR(sent, 2.0 * (m - 1) / m * s / k, 1e-9 * s);
  }
  CollectiveParams flat;
  flat.hierarchical = false;
  const auto flat_sent = sent_bytes(plan(CollectiveOp::kAllReduce, servers, s, flat), &servers);
  for (std::size_t i = 0; i < flat_sent.size(); ++i) {
    EXPECT_NEAR(flat_sent[i], (i % k == k - 1) ? 2.0 * (n - 1) / n * s : 0.0, 1e-9 * s);
  }
}

TEST(CollectivePlan, HierarchicalPhasesStayInsideOrFollowRails) {
  const std::int64_t m = 3, k = 4;
  const auto servers = blocked(m, k);
  const CollectivePlan p = plan(CollectiveOp::kAllReduce, servers);
  ASSERT_EQ(p.phases.size(), 3u);
  EXPECT_EQ(p.phases[0].steps, 3);  // k-1
  EXPECT_EQ(p.phases[1].steps, 4);  // 2(m-1)
  EXPECT_EQ(p.phases[2].steps, 3);
  EXPECT_FALSE(p.phases[0].crosses_network);
  EXPECT_TRUE(p.phases[1].crosses_network);
  EXPECT_FALSE(p.phases[2].crosses_network);
  EXPECT_EQ(p.phases[0].channels.size(), static_cast<std::size_t>(m * 2));  // one ring per server x C
  EXPECT_EQ(p.phases[1].channels.size(), static_cast<std::size_t>(k * 2));  // one ring per rail x C
  for (std::size_t ph : {0u, 2u}) {
    for (const CommChannel& c : p.phases[ph].channels) {
      EXPECT_DOUBLE_EQ(c.bytes_per_edge, 3.0 / 4.0 * kMiB / 2);  // (k-1)/k * S / C
      for (const CommEdge& e : c.edges) EXPECT_EQ(server_of(servers, e.src), server_of(servers, e.dst));
    }
  }
  for (const CommChannel& c : p.phases[1].channels) {
    EXPECT_DOUBLE_EQ(c.bytes_per_edge, 2.0 * 2.0 / 3.0 * kMiB / 4 / 2);  // 2(m-1)/m * S/k / C
    for (const CommEdge& e : c.edges) {
      EXPECT_NE(server_of(servers, e.src), server_of(servers, e.dst));
      EXPECT_EQ(e.src % k, e.dst % k);            // same local rank: one rail
      EXPECT_EQ((e.src / k + 1) % m, e.dst / k);  // server order
    }
  }
  const CollectiveParams d;
  EXPECT_EQ(p.latency_ns(d), d.base_latency_ns + 6 * d.nvlink_step_latency_ns + 4 * d.net_step_latency_ns);
}

// Servers are ordered by first member and local ranks follow group order, whatever the ids.
TEST(CollectivePlan, HierarchicalRailsFollowGroupOrderForInterleavedMembers) {
  const std::vector<std::int64_t> servers = {7, 3, 7, 3, 7, 3};  // m = 2 servers, k = 3
  const CollectivePlan p = plan(CollectiveOp::kReduceScatter, servers);
  ASSERT_EQ(p.phases.size(), 2u);
  std::set<std::pair<std::int32_t, std::int32_t>> rail_edges;
  for (const CommChannel& c : p.phases[1].channels) {
    for (const CommEdge& e : c.edges) rail_edges.insert({e.src, e.dst});
  }
  // Local rank r is member 2r on server 7 and 2r+1 on server 3.
  const std::set<std::pair<std::int32_t, std::int32_t>> want = {{0, 1}, {1, 0}, {2, 3}, {3, 2}, {4, 5}, {5, 4}};
  EXPECT_EQ(rail_edges, want);
  const CollectivePlan g = plan(CollectiveOp::kAllGather, servers);
  EXPECT_TRUE(g.phases[0].crosses_network);  // all-gather: rails first, then NVLink
  EXPECT_FALSE(g.phases[1].crosses_network);
}

TEST(CollectivePlan, FlatRingWhenHierarchicalDoesNotApply) {
  CollectiveParams off;
  off.hierarchical = false;
  EXPECT_EQ(plan(CollectiveOp::kAllReduce, blocked(2, 4), kMiB, off).phases.size(), 1u);
  EXPECT_EQ(plan(CollectiveOp::kAllReduce, blocked(8, 1)).phases.size(), 1u);    // one per server
  EXPECT_EQ(plan(CollectiveOp::kAllReduce, blocked(1, 8)).phases.size(), 1u);    // one server
  EXPECT_EQ(plan(CollectiveOp::kAllReduce, {1, 1, 1, 2, 2}).phases.size(), 1u);  // unequal
  EXPECT_EQ(plan(CollectiveOp::kBroadcast, blocked(2, 4)).phases.size(), 1u);    // no 2-level broadcast
}

TEST(CollectivePlan, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, 8), 14.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllGather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllToAll, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kSendRecv, 2), 1.0);
}

TEST(CollectivePlan, NamesRoundTripAndUnknownNamesNameTheKey) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
                          CollectiveOp::kBroadcast, CollectiveOp::kAllToAll, CollectiveOp::kSendRecv}) {
    EXPECT_EQ(parse_collective_op(to_string(op), "collective.op"), op);
  }
  EXPECT_EQ(to_string(CollectiveOp::kAllReduce), "all_reduce");
  EXPECT_EQ(parse_collective_algorithm("tree", "collective.algo"), CollectiveAlgorithm::kTree);
  EXPECT_EQ(to_string(CollectiveAlgorithm::kRing), "ring");
  try {
    parse_collective_op("allreduce", "collective.op");
    FAIL();
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "collective.op");
    EXPECT_EQ(e.value(), "allreduce");
  }
  try {
    parse_collective_algorithm("mesh", "collective.algo");
    FAIL();
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "collective.algo");
  }
}

void expect_config_error(const std::function<void()>& fn, const std::string& key) {
  try {
    fn();
    ADD_FAILURE() << "no ConfigError for " << key;
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key);
  }
}

TEST(CollectivePlan, InvalidParamsAndRequestsNameTheKey) {
  const auto with = [](auto change) {
    CollectiveParams p;
    change(p);
    return p;
  };
  const auto params_error = [&](const CollectiveParams& p, const std::string& key) {
    expect_config_error([&] { validate(p); }, key);
    expect_config_error([&] { plan(CollectiveOp::kAllReduce, blocked(2, 1), kMiB, p); }, key);
  };
  params_error(with([](auto& p) { p.channels = 0; }), "collective.channels");
  params_error(with([](auto& p) { p.channels = 65; }), "collective.channels");
  params_error(with([](auto& p) { p.base_latency_ns = -1; }), "collective.base_latency_us");
  params_error(with([](auto& p) { p.nvlink_step_latency_ns = -1; }), "collective.nvlink_step_latency_us");
  params_error(with([](auto& p) { p.net_step_latency_ns = -1; }), "collective.net_step_latency_us");
  EXPECT_NO_THROW(validate(with([](auto& p) { p.channels = 64; })));

  expect_config_error([] { plan(CollectiveOp::kAllReduce, {}); }, "collective.group_size");
  expect_config_error([] { plan(CollectiveOp::kSendRecv, blocked(3, 1)); }, "collective.group_size");
  expect_config_error([] { plan(CollectiveOp::kAllToAll, blocked(1025, 1)); }, "collective.group_size");
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    expect_config_error([&] { plan(CollectiveOp::kAllReduce, blocked(2, 1), bad); }, "collective.bytes");
  }
}

}  // namespace
}  // namespace megasim::models

namespace megasim::models {
namespace {

double total_reduced(const CollectivePlan& p) {
  double total = 0;
  for (const CommPhase& phase : p.phases) total += phase.reduced_bytes;
  return total;
}

// Each member combines (n-1)/n of the buffer in a ring reduce-scatter or all-reduce, nothing in an
// all-gather; the two-level ring splits that into (k-1)/k of S inside servers and (m-1)/m of S/k on
// the rails; the tree combines every buffer but the root's once, (n-1)/n per member on average.
TEST(CollectivePlan, ReducedBytesPerMember) {
  const double s = kMiB;
  const std::vector<std::int64_t> four_apart{0, 1, 2, 3};
  EXPECT_DOUBLE_EQ(total_reduced(plan(CollectiveOp::kReduceScatter, four_apart, s)), 0.75 * s);
  EXPECT_DOUBLE_EQ(total_reduced(plan(CollectiveOp::kAllReduce, four_apart, s)), 0.75 * s);
  EXPECT_DOUBLE_EQ(total_reduced(plan(CollectiveOp::kAllGather, four_apart, s)), 0.0);
  EXPECT_DOUBLE_EQ(total_reduced(plan(CollectiveOp::kBroadcast, four_apart, s)), 0.0);
  const std::vector<std::int64_t> two_by_four{0, 0, 0, 0, 1, 1, 1, 1};  // m = 2 servers of k = 4
  const CollectivePlan hierarchical = plan(CollectiveOp::kAllReduce, two_by_four, s);
  ASSERT_EQ(hierarchical.phases.size(), 3u);
  EXPECT_DOUBLE_EQ(hierarchical.phases[0].reduced_bytes, 0.75 * s);     // (k-1)/k of S
  EXPECT_DOUBLE_EQ(hierarchical.phases[1].reduced_bytes, 0.5 * s / 4);  // (m-1)/m of S/k
  EXPECT_DOUBLE_EQ(hierarchical.phases[2].reduced_bytes, 0.0);          // the all-gather
  const CollectivePlan tree =
      plan_collective(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, s, four_apart, CollectiveParams{});
  EXPECT_DOUBLE_EQ(total_reduced(tree), 0.75 * s);
}

// With a reduction rate, a reducing phase costs its reduced bytes at that rate on top of its steps;
// at the default 0 (NCCL) it costs nothing more.
TEST(CollectivePlan, ReductionRateAddsToThePhaseLatency) {
  CollectiveParams free;
  CollectiveParams slow;
  slow.reduction_gbytes_per_s = 2.0;  // 2 bytes per ns
  const CollectivePlan rs = plan(CollectiveOp::kReduceScatter, {0, 0}, 4000.0, slow);
  ASSERT_EQ(rs.phases.size(), 1u);
  const sim::SimTime steps = rs.phases[0].steps * slow.nvlink_step_latency_ns;  // one server
  EXPECT_EQ(phase_latency_ns(rs.phases[0], free), steps);
  EXPECT_EQ(phase_latency_ns(rs.phases[0], slow), steps + 1000);  // half of 4000 bytes at 2 B/ns
  const CollectivePlan ag = plan(CollectiveOp::kAllGather, {0, 0}, 4000.0, slow);
  EXPECT_EQ(phase_latency_ns(ag.phases[0], slow), phase_latency_ns(ag.phases[0], free));
  CollectiveParams bad;
  bad.reduction_gbytes_per_s = -1;
  EXPECT_THROW(validate(bad), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::models
