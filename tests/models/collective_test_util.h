// Helpers shared by the collective planner tests: group layouts and per-member byte counts read
// from a plan's edges.
#pragma once

#include <cstdint>
#include <vector>

#include "models/collective.h"

namespace megasim::models::testing {

// m servers of k members, member i on server 100 + i / k (ids need not start at 0).
inline std::vector<std::int64_t> blocked(std::int64_t m, std::int64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < m * k; ++i) out.push_back(100 + i / k);
  return out;
}

// The server of member i.
inline std::int64_t server_of(const std::vector<std::int64_t>& servers, std::int32_t i) {
  return servers[static_cast<std::size_t>(i)];
}

// Bytes each member sends over the whole plan; with `servers`, only edges that leave a server.
inline std::vector<double> sent_bytes(const CollectivePlan& plan, const std::vector<std::int64_t>* servers = nullptr) {
  std::vector<double> sent(static_cast<std::size_t>(plan.group_size), 0.0);
  for (const CommPhase& phase : plan.phases) {
    for (const CommChannel& channel : phase.channels) {
      for (const CommEdge& e : channel.edges) {
        const auto src = static_cast<std::size_t>(e.src), dst = static_cast<std::size_t>(e.dst);
        if (servers != nullptr && (*servers)[src] == (*servers)[dst]) continue;
        sent[src] += channel.bytes_per_edge;
      }
    }
  }
  return sent;
}

}  // namespace megasim::models::testing
