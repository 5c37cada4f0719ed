// NCCL's double binary tree: the parent function against NCCL's own illustrations
// (src/graph/trees.cc) and its structural invariants, and the tree all-reduce plan.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "collective_test_util.h"
#include "models/collective.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

std::vector<std::int32_t> parents(int tree, std::int32_t n) {
  std::vector<std::int32_t> out;
  for (std::int32_t r = 0; r < n; ++r) out.push_back(double_binary_tree_parent(tree, n, r));
  return out;
}

// The trees drawn in NCCL's trees.cc comments: 14 ranks (tree 0), 12 ranks mirrored, 13 shifted.
TEST(DoubleBinaryTree, MatchesNcclIllustrations) {
  //                        0   1  2  3  4  5  6  7  8  9  10  11  12  13
  EXPECT_EQ(parents(0, 14), (std::vector<std::int32_t>{-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12}));
  //  3 -- 11 root; 3: 1, 7; 1: 0, 2; 7: 5, 9; 5: 4, 6; 9: 8, 10
  EXPECT_EQ(parents(1, 12), (std::vector<std::int32_t>{1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1}));
  //  1 root; 1: 9; 9: 5, 0; 5: 3, 7; 0: 11; 3: 2, 4; 7: 6, 8; 11: 10, 12
  EXPECT_EQ(parents(1, 13), (std::vector<std::int32_t>{9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11}));
}

TEST(DoubleBinaryTree, TreesAreSpanningShallowAndComplementary) {
  for (std::int32_t n = 1; n <= 70; ++n) {
    std::vector<int> children[2];
    for (int t = 0; t < 2; ++t) {
      children[t].assign(static_cast<std::size_t>(n), 0);
      int roots = 0, depth = 0;
      for (std::int32_t r = 0; r < n; ++r) {
        int d = 0;  // walking up must reach the root within n hops (no cycles)
        for (std::int32_t u = r; double_binary_tree_parent(t, n, u) >= 0 && d <= n; ++d) {
          u = double_binary_tree_parent(t, n, u);
        }
        ASSERT_LE(d, n - 1);
        depth = std::max(depth, d);
        const std::int32_t p = double_binary_tree_parent(t, n, r);
        if (p < 0)
          ++roots;
        else
          ++children[t][static_cast<std::size_t>(p)];
      }
      EXPECT_EQ(roots, 1);
      // The root has one child heading a complete in-order tree of ranks below the next power of 2.
      EXPECT_EQ(depth, n == 1 ? 0 : static_cast<int>(std::ceil(std::log2(n)))) << n;
      EXPECT_LE(depth, static_cast<int>(std::ceil(std::log2(n + 1))));
      for (int c : children[t]) EXPECT_LE(c, 2);
    }
    for (std::int32_t r = 0; r < n; ++r) {
      const bool both = children[0][static_cast<std::size_t>(r)] > 0 && children[1][static_cast<std::size_t>(r)] > 0;
      // Interior in both only for rank 0 with n odd: root of tree 0 and the shifted rank n-1 in tree 1.
      EXPECT_EQ(both, r == 0 && n % 2 == 1 && n > 2) << "n=" << n << " r=" << r;
    }
  }
}

constexpr double kMiB = 1024.0 * 1024.0;

CollectivePlan tree_plan(const std::vector<std::int64_t>& servers, int channels = 2) {
  CollectiveParams params;
  params.channels = channels;
  return plan_collective(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, kMiB, servers, params);
}

// Every tree channel is a spanning tree over the members with each tree edge used both ways, its
// server-level edges join the channel's leaders (local rank j mod k) along tree j % 2.
TEST(TreePlan, ChannelsAreSpanningTreesThroughRotatingLeaders) {
  const std::int64_t m = 5, k = 3;
  const auto servers = testing::blocked(m, k);
  const CollectivePlan p = tree_plan(servers);
  ASSERT_EQ(p.phases.size(), 1u);
  ASSERT_EQ(p.phases[0].channels.size(), 4u);  // two trees x C
  std::set<std::uint32_t> connections;
  for (std::size_t j = 0; j < 4; ++j) {
    const CommChannel& c = p.phases[0].channels[j];
    connections.insert(c.connection);
    EXPECT_DOUBLE_EQ(c.bytes_per_edge, kMiB / 4);  // S/2 per tree, / C
    std::set<std::pair<std::int32_t, std::int32_t>> directed;
    std::map<std::int32_t, std::int32_t> up_server;  // child server -> parent server
    for (const CommEdge& e : c.edges) {
      directed.insert({e.src, e.dst});
      const std::int64_t a = e.src / k, b = e.dst / k;
      if (a == b) continue;
      EXPECT_EQ(e.src % k, static_cast<std::int64_t>(j) % k);
      EXPECT_EQ(e.dst % k, static_cast<std::int64_t>(j) % k);
      if (double_binary_tree_parent(static_cast<int>(j % 2), m, static_cast<std::int32_t>(a)) == b) {
        up_server[static_cast<std::int32_t>(a)] = static_cast<std::int32_t>(b);
      }
    }
    EXPECT_EQ(directed.size(), c.edges.size());                            // no duplicates
    EXPECT_EQ(c.edges.size(), static_cast<std::size_t>(2 * (m * k - 1)));  // n-1 tree edges, both ways
    for (const auto& [src, dst] : directed) EXPECT_TRUE(directed.count({dst, src}));
    EXPECT_EQ(up_server.size(), static_cast<std::size_t>(m - 1));  // every non-root server has its parent
    // Connected: union-find over the undirected edges.
    std::vector<std::int32_t> root(static_cast<std::size_t>(m * k));
    for (std::size_t i = 0; i < root.size(); ++i) root[i] = static_cast<std::int32_t>(i);
    const auto find = [&](std::int32_t x) {
      while (root[static_cast<std::size_t>(x)] != x) x = root[static_cast<std::size_t>(x)];
      return x;
    };
    for (const auto& [src, dst] : directed) root[static_cast<std::size_t>(find(src))] = find(dst);
    for (std::int32_t i = 0; i < m * k; ++i) EXPECT_EQ(find(i), find(0));
  }
  EXPECT_EQ(connections.size(), 4u);
}

TEST(TreePlan, StepsAndLatency) {
  // 4 servers x 2: server tree depth ceil(log2 4) = 2, chain of 1 hop; steps 2 x (2 + 1).
  const CollectivePlan p = tree_plan(testing::blocked(4, 2));
  EXPECT_EQ(p.phases[0].steps, 6);
  EXPECT_EQ(p.phases[0].intra_server_steps, 2);
  EXPECT_TRUE(p.phases[0].crosses_network);
  const CollectiveParams d;
  EXPECT_EQ(p.latency_ns(d), d.base_latency_ns + 4 * d.net_step_latency_ns + 2 * d.nvlink_step_latency_ns);
  // One server of 8: a chain only, all NVLink.
  const CollectivePlan one = tree_plan(testing::blocked(1, 8));
  EXPECT_EQ(one.phases[0].steps, 14);
  EXPECT_FALSE(one.phases[0].crosses_network);
  EXPECT_EQ(one.latency_ns(d), d.base_latency_ns + 14 * d.nvlink_step_latency_ns);
}

// Each channel moves S/2/C over 2(n-1) directed edges, 2C channels: 2(n-1)*S in all, the same total
// as a ring all-reduce (n ranks x 2(n-1)/n*S).
TEST(TreePlan, TotalBytesEqualRingAllReduce) {
  for (const auto& [m, k] : {std::pair{7, 1}, std::pair{6, 4}, std::pair{1, 8}}) {
    double total = 0;
    for (double b : testing::sent_bytes(tree_plan(testing::blocked(m, k), 3))) total += b;
    const double n = m * k;
    EXPECT_NEAR(total, 2.0 * (n - 1) * kMiB, 1e-6 * kMiB);
  }
}

TEST(TreePlan, OnlyAllReduce) {
  for (CollectiveOp op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather, CollectiveOp::kBroadcast,
                          CollectiveOp::kAllToAll, CollectiveOp::kSendRecv}) {
    try {
      plan_collective(op, CollectiveAlgorithm::kTree, kMiB, testing::blocked(2, 1), {});
      ADD_FAILURE() << to_string(op);
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "collective.algo");
      EXPECT_EQ(e.value(), "tree");
    }
  }
}

}  // namespace
}  // namespace megasim::models
