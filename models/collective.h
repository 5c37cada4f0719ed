// Collective algorithms as NCCL runs them, expressed independently of any fabric: a collective over
// a group becomes a sequence of phases; a phase is a set of channels that run concurrently; a
// channel is a pipelined set of point-to-point edges that advance at one common rate (data moves
// around a ring, or up and down a tree, in chunks, so the slowest edge sets the pace), each edge
// carrying bytes_per_edge. The backend maps members to GPUs and edges to flows on its fabric.
//
// Cost shape (NCCL's latency + bytes/bandwidth, nccl-tests doc/PERFORMANCE.md): for a flat ring of n
// members and S bytes, all-reduce moves 2(n-1)/n*S per edge in 2(n-1) steps; reduce-scatter and
// all-gather (n-1)/n*S in n-1 steps. busbw = algbw x factor: all-reduce 2(n-1)/n, reduce-scatter and
// all-gather (n-1)/n, all-to-all (n-1)/n, broadcast and send/recv 1.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/time.h"

namespace megasim::models {

enum class CollectiveOp : std::uint8_t { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kAllToAll, kSendRecv };
enum class CollectiveAlgorithm : std::uint8_t { kRing, kTree };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(CollectiveAlgorithm algo);
// Parse the snake_case names ("all_reduce", "ring"); throw sim::ConfigError naming `key` otherwise.
CollectiveOp parse_collective_op(std::string_view text, std::string_view key);
CollectiveAlgorithm parse_collective_algorithm(std::string_view text, std::string_view key);

struct CollectiveParams {
  int channels = 2;  // NCCL channels: independent rings/trees, each on its own connections
  // Fixed cost of one collective call (kernel launch and proxy start-up).
  sim::SimTime base_latency_ns = 10 * sim::kMicrosecond;
  // Cost of one algorithm step whose hops are all NVLink, or of one step that crosses the network.
  sim::SimTime nvlink_step_latency_ns = 1 * sim::kMicrosecond;
  sim::SimTime net_step_latency_ns = 5 * sim::kMicrosecond;
  // Ring all-reduce, reduce-scatter and all-gather over groups spanning servers with more than one
  // member per server: reduce-scatter over NVLink, one ring per rail across servers, all-gather over
  // NVLink (see plan_collective). The tree has its own intra-server chains and ignores this.
  bool hierarchical = true;
  // How fast a member combines received data into its own in reducing collectives (all-reduce,
  // reduce-scatter), GB/s of received data; each reducing phase then costs its reduced bytes at this
  // rate after its transfer (CommPhase::reduced_bytes). 0: free, as with NCCL, whose reduction is
  // fused into its copies and hidden by them; MPI on CPUs sums on the core that copied the data
  // (megasim calibrate --backend cpu measures it).
  double reduction_gbytes_per_s = 0;
};
// Throws sim::ConfigError("collective.<key>", ...) for out-of-range values.
void validate(const CollectiveParams& params);

struct CommEdge {
  std::int32_t src;  // member index in the group
  std::int32_t dst;
};

struct CommChannel {
  std::vector<CommEdge> edges;
  double bytes_per_edge = 0;
  // The NCCL channel this belongs to, in [0, kMaxConnectionsPerCollective): channels of a
  // collective that may join the same pair of members have distinct values, so each gets its own QPs
  // (NCCL opens separate connections per channel). Channels over disjoint members may share a value.
  std::uint32_t connection = 0;
};
inline constexpr std::uint32_t kMaxConnectionsPerCollective = 1024;

struct CommPhase {
  std::vector<CommChannel> channels;
  std::int32_t steps = 0;        // algorithm steps, each paying a step latency
  bool crosses_network = false;  // whether any edge leaves a server (selects the step latency)
  // Of `steps`, those whose hops all stay inside a server (a tree's intra-server chain) and so pay
  // the NVLink step latency even when the phase crosses the network.
  std::int32_t intra_server_steps = 0;
  // Bytes each member combines into its own in this phase: (n-1)/n of what a ring reduce-scatter
  // (or an all-reduce's reduce-scatter half) over n members handles, the average over members of a
  // tree's (each non-root member's buffer is combined once); 0 for phases that only copy.
  double reduced_bytes = 0;
};
// steps x step latency of one phase, plus its reduced bytes at params.reduction_gbytes_per_s (no
// base latency).
sim::SimTime phase_latency_ns(const CommPhase& phase, const CollectiveParams& params);

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::int64_t group_size = 0;
  double bytes = 0;  // the nccl-tests "size" of the operation
  std::vector<CommPhase> phases;
  sim::SimTime base_latency_ns = 0;  // params.base_latency_ns when planned
  // The alpha part of the cost: base_latency_ns plus phase_latency_ns of every phase (the step
  // latencies come from `params`).
  [[nodiscard]] sim::SimTime latency_ns(const CollectiveParams& params) const;
};

// Plans `op` over a group whose member i lives on server server_of_member[i] (any integers; equal
// means same server). For kBroadcast the root is member 0; for kSendRecv the group has exactly two
// members and member 0 sends. A group of one member gets no phases. With C = params.channels:
//  - ring, flat (hierarchical off, one member per server, one server, or servers holding unequal
//    numbers of members): C rings over the members in group order (i -> i+1 mod n). all-reduce
//    2(n-1)/n*S/C per edge in 2(n-1) steps; reduce-scatter, all-gather (n-1)/n*S/C in n-1 steps;
//    broadcast a pipelined chain 0 -> 1 -> ... -> n-1 (no wrap), S/C per edge, n-1 steps; all-to-all
//    one single-edge channel per ordered pair carrying S/n, one step (all pairs concurrent); send/recv
//    C single-edge channels 0 -> 1 of S/C, one step.
//  - ring, hierarchical (m > 1 servers with k > 1 members each; all-reduce, reduce-scatter and
//    all-gather): servers ordered by first member, local ranks by group order. all-reduce = intra-server
//    reduce-scatter ((k-1)/k*S/C, k-1 steps), then k rail rings (local rank r of every server) each
//    all-reducing S/k (2(m-1)/m*S/k/C, 2(m-1) steps), then intra-server all-gather. reduce-scatter =
//    intra-server reduce-scatter of S then rail reduce-scatter of S/k ((m-1)/m*S/k/C, m-1 steps);
//    all-gather = rail all-gather then intra-server all-gather. Per rank this sends the flat ring's
//    total, with only the rail phase, S/k of it, on the network.
//  - tree (all-reduce only, as in NCCL): one phase of 2C channels, channel j on tree j % 2 of
//    double_binary_tree_parent over the servers. Inside a server the members form a chain to a leader,
//    rotated per channel (leader = local rank j mod k), so channels use different NICs as NCCL's do.
//    Each channel holds every reduce edge (child -> parent) and broadcast edge (parent -> child), each
//    carrying S/2/C; steps 2 x (server-tree depth + longest chain), the chain steps intra-server.
// Throws sim::ConfigError naming "collective.group_size" (empty group; send/recv not of two;
// all-to-all over more than 1024 members, which would be over a million flows),
// "collective.bytes" (not > 0), "collective.algo" (tree for an op other than all-reduce) or the
// key validate(params) names.
CollectivePlan plan_collective(CollectiveOp op, CollectiveAlgorithm algorithm, double bytes,
                               std::span<const std::int64_t> server_of_member, const CollectiveParams& params);

// nccl-tests' bus-bandwidth factor for a group of n >= 1.
double bus_bandwidth_factor(CollectiveOp op, std::int64_t n);

// NCCL's double binary tree (src/graph/trees.cc, ncclGetDtree): the parent of `rank` in tree 0 or 1
// over n ranks, or -1 for the root. Tree 0 is NCCL's btree rooted at 0, whose odd ranks are leaves;
// tree 1 mirrors it (rank -> n-1-rank) when n is even and shifts it by one when n is odd, so every
// rank is a leaf in at least one tree, except rank 0 when n is odd (root of tree 0, interior in tree 1).
std::int32_t double_binary_tree_parent(int tree, std::int32_t n, std::int32_t rank);

}  // namespace megasim::models
