// NCCL's double binary tree all-reduce (Sanders, Speck and Träff 2009; NCCL 2.4, "Massively Scale
// Your Deep Learning Training with NCCL 2.4"): two complementary binary trees over the servers, each
// reducing and broadcasting half the data, pipelined, with a chain through each server's members.
#include <algorithm>

#include "models/collective_internal.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

// ncclGetBtree's parent (src/graph/trees.cc): with `bit` the lowest set bit of rank, the parent is
// (rank ^ bit) | (bit << 1), or rank ^ bit when that is out of range. Rank 0 is the root.
std::int32_t btree_parent(std::int32_t n, std::int32_t rank) {
  if (rank == 0) return -1;
  std::int32_t bit = 1;
  while ((bit & rank) == 0) bit <<= 1;
  const std::int32_t up = (rank ^ bit) | (bit << 1);
  return up < n ? up : (rank ^ bit);
}

}  // namespace

std::int32_t double_binary_tree_parent(int tree, std::int32_t n, std::int32_t rank) {
  MEGASIM_ASSERT(n >= 1 && rank >= 0 && rank < n && (tree == 0 || tree == 1), "tree rank out of range");
  if (tree == 0) return btree_parent(n, rank);
  if (n % 2 == 1) {  // shift by one
    const std::int32_t up = btree_parent(n, (rank - 1 + n) % n);
    return up < 0 ? -1 : (up + 1) % n;
  }
  const std::int32_t up = btree_parent(n, n - 1 - rank);  // mirror
  return up < 0 ? -1 : n - 1 - up;
}

namespace detail {
namespace {

// Edges from child to parent in both directions (reduce up, broadcast down).
void add_both_ways(CommChannel& channel, std::int32_t child, std::int32_t parent) {
  channel.edges.push_back({child, parent});
  channel.edges.push_back({parent, child});
}

// Longest root-to-leaf path, in edges, of `tree` over n ranks.
std::int32_t tree_depth(int tree, std::int32_t n) {
  std::int32_t depth = 0;
  for (std::int32_t r = 0; r < n; ++r) {
    std::int32_t d = 0;
    for (std::int32_t u = double_binary_tree_parent(tree, n, r); u >= 0; u = double_binary_tree_parent(tree, n, u)) {
      ++d;
    }
    depth = std::max(depth, d);
  }
  return depth;
}

// Tree channel j: tree j % 2 over the servers; in server s the chain starts at local rank j mod k_s
// (the leader, which holds the inter-server edges) and runs through the others in local order.
CommChannel tree_channel(const ServerMembers& servers, int j, double bytes_per_edge) {
  CommChannel channel;
  channel.bytes_per_edge = bytes_per_edge;
  channel.connection = static_cast<std::uint32_t>(j);
  const auto m = static_cast<std::int32_t>(servers.size());
  std::vector<std::int32_t> leader(servers.size());
  for (std::size_t s = 0; s < servers.size(); ++s) {
    const auto& members = servers[s];
    const std::size_t k = members.size(), first = static_cast<std::size_t>(j) % k;
    leader[s] = members[first];
    for (std::size_t i = 1; i < k; ++i) add_both_ways(channel, members[(first + i) % k], members[(first + i - 1) % k]);
  }
  for (std::int32_t s = 0; s < m; ++s) {
    const std::int32_t parent = double_binary_tree_parent(j % 2, m, s);
    if (parent >= 0)
      add_both_ways(channel, leader[static_cast<std::size_t>(s)], leader[static_cast<std::size_t>(parent)]);
  }
  return channel;
}

}  // namespace

void plan_double_binary_tree(CollectivePlan& plan, const ServerMembers& servers, const CollectiveParams& params) {
  const auto m = static_cast<std::int32_t>(servers.size());
  std::size_t longest = 0;
  for (const auto& s : servers) longest = std::max(longest, s.size());
  const auto chain = static_cast<std::int32_t>(longest) - 1;
  const std::int32_t depth = std::max(tree_depth(0, m), tree_depth(1, m));
  CommPhase& phase = plan.phases.emplace_back();
  phase.steps = 2 * (depth + chain);
  phase.intra_server_steps = 2 * chain;
  const double n = static_cast<double>(plan.group_size);
  phase.reduced_bytes = (n - 1.0) / n * plan.bytes;  // every member but the root's buffer combined once
  const int channels = 2 * params.channels;
  const double bytes_per_edge = plan.bytes / static_cast<double>(channels);
  for (int j = 0; j < channels; ++j) phase.channels.push_back(tree_channel(servers, j, bytes_per_edge));
}

}  // namespace detail
}  // namespace megasim::models
