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
  // For groups spanning servers with more than one member per server: reduce-scatter over NVLink,
  // one ring (or tree) per rail across servers, all-gather over NVLink.
  bool hierarchical = true;
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
  std::uint32_t connection = 0;  // distinct per channel of a collective, so each gets its own QPs
};

struct CommPhase {
  std::vector<CommChannel> channels;
  std::int32_t steps = 0;         // algorithm steps, each paying a step latency
  bool crosses_network = false;   // whether any edge leaves a server (selects the step latency)
};

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::int64_t group_size = 0;
  double bytes = 0;  // the nccl-tests "size" of the operation
  std::vector<CommPhase> phases;
  sim::SimTime base_latency_ns = 0;
  // Sum over phases of steps x step latency, plus the base latency: the alpha part of the cost.
  [[nodiscard]] sim::SimTime latency_ns(const CollectiveParams& params) const;
};

// Plans `op` over a group whose member i lives on server server_of_member[i] (any integers; equal
// means same server). For kBroadcast the root is member 0; for kSendRecv the group has exactly two
// members and member 0 sends. Throws sim::ConfigError for impossible requests (empty group, bytes
// <= 0, tree all-to-all, ...).
CollectivePlan plan_collective(CollectiveOp op, CollectiveAlgorithm algorithm, double bytes,
                               std::span<const std::int64_t> server_of_member, const CollectiveParams& params);

// nccl-tests' bus-bandwidth factor for a group of n.
double bus_bandwidth_factor(CollectiveOp op, std::int64_t n);

}  // namespace megasim::models
