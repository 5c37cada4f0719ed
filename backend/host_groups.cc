#include "backend/host_groups.h"

#include <algorithm>

#include "sim/error.h"

namespace megasim::backend {

std::string_view to_string(HostLink link) {
  return link == HostLink::kIntraNode ? "intra-node" : "inter-node";
}

bool HostGroups::measurable(HostLink link) const {
  return members(link) >= 2;
}

int HostGroups::members(HostLink link) const {
  return link == HostLink::kIntraNode ? ranks_per_host : host_count();
}

int HostGroups::color(HostLink link, int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return link == HostLink::kIntraNode ? host_of.at(r) : local_index.at(r);
}

int HostGroups::key(HostLink link, int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return link == HostLink::kIntraNode ? local_index.at(r) : host_of.at(r);
}

int HostGroups::world_rank(int host, int local) const {
  for (std::size_t r = 0; r < host_of.size(); ++r) {
    if (host_of[r] == host && local_index[r] == local) return static_cast<int>(r);
  }
  MEGASIM_ASSERT(false, "no rank with that host and local index");
  return -1;
}

std::pair<int, int> HostGroups::ping_pong_pair(HostLink link) const {
  MEGASIM_ASSERT(measurable(link), "a ping-pong over a link the job does not have");
  return link == HostLink::kIntraNode ? std::pair{world_rank(0, 0), world_rank(0, 1)}
                                      : std::pair{world_rank(0, 0), world_rank(1, 0)};
}

HostGroups group_by_host(std::span<const std::string> host_of_rank) {
  if (host_of_rank.empty()) throw sim::ConfigError("cluster.gpus", "0", "a job of at least one rank");
  HostGroups g;
  std::vector<int> count;
  for (const std::string& name : host_of_rank) {
    if (name.empty()) throw sim::ConfigError("cluster.gpus", "(a rank without a host name)", "named hosts");
    const auto found = std::find(g.hosts.begin(), g.hosts.end(), name);
    const auto host = static_cast<int>(found - g.hosts.begin());
    if (found == g.hosts.end()) {
      g.hosts.push_back(name);
      count.push_back(0);
    }
    g.host_of.push_back(host);
    g.local_index.push_back(count[static_cast<std::size_t>(host)]++);
  }
  for (std::size_t h = 1; h < count.size(); ++h) {
    if (count[h] != count[0]) {
      throw sim::ConfigError(
          "cluster.gpus_per_server",
          g.hosts[0] + ": " + std::to_string(count[0]) + " ranks, " + g.hosts[h] + ": " + std::to_string(count[h]),
          "the same number of ranks on every host of the job");
    }
  }
  g.ranks_per_host = count.empty() ? 0 : count[0];
  return g;
}

}  // namespace megasim::backend
