// Ring-family plans: flat rings and chains over the group (NCCL's ring algorithm, nccl-tests
// PERFORMANCE.md for the bytes per rank), and the two-level NVLink-then-rail decomposition.
#include <algorithm>
#include <numeric>

#include "models/collective_internal.h"
#include "sim/error.h"

namespace megasim::models::detail {
namespace {

// `channels` copies of the ring (wrap) or chain (no wrap) through `members`, channel c on
// connection c. Rings of one member have no edges and are left out.
void add_rings(CommPhase& phase, std::span<const std::int32_t> members, bool wrap, double bytes_per_edge,
               int channels) {
  const std::size_t n = members.size();
  if (n < 2) return;
  const std::size_t edges = wrap ? n : n - 1;
  for (int c = 0; c < channels; ++c) {
    CommChannel& channel = phase.channels.emplace_back();
    channel.bytes_per_edge = bytes_per_edge;
    channel.connection = static_cast<std::uint32_t>(c);
    channel.edges.reserve(edges);
    for (std::size_t i = 0; i < edges; ++i) channel.edges.push_back({members[i], members[(i + 1) % n]});
  }
}

// All-to-all: every ordered pair exchanges S/n at once, one single-edge channel per pair (pairs have
// distinct endpoints, so one connection number suffices).
void add_all_pairs(CommPhase& phase, std::int32_t n, double bytes_per_edge) {
  phase.channels.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (std::int32_t i = 0; i < n; ++i) {
    for (std::int32_t j = 0; j < n; ++j) {
      if (i == j) continue;
      CommChannel& channel = phase.channels.emplace_back();
      channel.bytes_per_edge = bytes_per_edge;
      channel.edges.push_back({i, j});
    }
  }
}

CommPhase ring_phase(const ServerMembers& rings, double bytes_per_edge, std::int64_t steps, int channels) {
  CommPhase phase;
  phase.steps = static_cast<std::int32_t>(steps);
  for (const auto& ring : rings) add_rings(phase, ring, /*wrap=*/true, bytes_per_edge, channels);
  return phase;
}

}  // namespace

ServerMembers members_by_server(std::span<const std::int64_t> server_of_member) {
  std::vector<std::int32_t> order(server_of_member.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return server_of_member[static_cast<std::size_t>(a)] < server_of_member[static_cast<std::size_t>(b)];
  });
  ServerMembers servers;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto server = [&](std::size_t j) { return server_of_member[static_cast<std::size_t>(order[j])]; };
    if (i == 0 || server(i) != server(i - 1)) servers.emplace_back();
    servers.back().push_back(order[i]);
  }
  std::sort(servers.begin(), servers.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return servers;
}

bool use_hierarchical(CollectiveOp op, const ServerMembers& servers, const CollectiveParams& params) {
  if (!params.hierarchical || servers.size() < 2 || servers.front().size() < 2) return false;
  if (op != CollectiveOp::kAllReduce && op != CollectiveOp::kReduceScatter && op != CollectiveOp::kAllGather) {
    return false;
  }
  const std::size_t k = servers.front().size();
  return std::all_of(servers.begin(), servers.end(), [k](const auto& s) { return s.size() == k; });
}

void plan_flat_ring(CollectivePlan& plan, const CollectiveParams& params) {
  const std::int64_t n = plan.group_size;
  const double nd = static_cast<double>(n);
  const double per_channel = plan.bytes / static_cast<double>(params.channels);
  std::vector<std::int32_t> members(static_cast<std::size_t>(n));
  std::iota(members.begin(), members.end(), 0);
  CommPhase& phase = plan.phases.emplace_back();
  switch (plan.op) {
    case CollectiveOp::kAllReduce:
      add_rings(phase, members, true, 2.0 * (nd - 1.0) / nd * per_channel, params.channels);
      phase.steps = static_cast<std::int32_t>(2 * (n - 1));
      phase.reduced_bytes = (nd - 1.0) / nd * plan.bytes;
      break;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
      add_rings(phase, members, true, (nd - 1.0) / nd * per_channel, params.channels);
      phase.steps = static_cast<std::int32_t>(n - 1);
      if (plan.op == CollectiveOp::kReduceScatter) phase.reduced_bytes = (nd - 1.0) / nd * plan.bytes;
      break;
    case CollectiveOp::kBroadcast:
      add_rings(phase, members, false, per_channel, params.channels);
      phase.steps = static_cast<std::int32_t>(n - 1);
      break;
    case CollectiveOp::kAllToAll:
      add_all_pairs(phase, static_cast<std::int32_t>(n), plan.bytes / nd);
      phase.steps = 1;
      break;
    case CollectiveOp::kSendRecv:
      add_rings(phase, members, false, per_channel, params.channels);
      phase.steps = 1;
      break;
  }
}

// Two-level decomposition over m servers of k members (n = mk). Per rank, the intra-server part
// sends (k-1)/k*S and the rail part (m-1)/m*S/k; their sum is (mk-1)/(mk)*S, the flat ring's
// (n-1)/n*S (twice that for all-reduce), so only the network share changes: S/k of it.
void plan_hierarchical_ring(CollectivePlan& plan, const ServerMembers& servers, const CollectiveParams& params) {
  const std::size_t m = servers.size(), k = servers.front().size();
  const double md = static_cast<double>(m), kd = static_cast<double>(k);
  const double per_channel = plan.bytes / static_cast<double>(params.channels);
  ServerMembers rails(k);
  for (std::size_t r = 0; r < k; ++r) {
    for (const auto& server : servers) rails[r].push_back(server[r]);
  }
  const auto m64 = static_cast<std::int64_t>(m), k64 = static_cast<std::int64_t>(k);
  const CommPhase intra = ring_phase(servers, (kd - 1.0) / kd * per_channel, k64 - 1, params.channels);
  const double rail_once = (md - 1.0) / md * per_channel / kd;  // reduce-scatter or all-gather of S/k
  // The reducing phases: the intra-server reduce-scatter of S and the rail phase over S/k.
  CommPhase intra_reduce = intra;
  intra_reduce.reduced_bytes = (kd - 1.0) / kd * plan.bytes;
  const double rail_reduced = (md - 1.0) / md * plan.bytes / kd;
  switch (plan.op) {
    case CollectiveOp::kAllReduce:
      plan.phases.push_back(intra_reduce);
      plan.phases.push_back(ring_phase(rails, 2.0 * rail_once, 2 * (m64 - 1), params.channels));
      plan.phases.back().reduced_bytes = rail_reduced;
      plan.phases.push_back(intra);
      break;
    case CollectiveOp::kReduceScatter:
      plan.phases.push_back(intra_reduce);
      plan.phases.push_back(ring_phase(rails, rail_once, m64 - 1, params.channels));
      plan.phases.back().reduced_bytes = rail_reduced;
      break;
    case CollectiveOp::kAllGather:
      plan.phases.push_back(ring_phase(rails, rail_once, m64 - 1, params.channels));
      plan.phases.push_back(intra);
      break;
    default:
      MEGASIM_ASSERT(false, "hierarchical ring planned for an op without one");
  }
}

}  // namespace megasim::models::detail
