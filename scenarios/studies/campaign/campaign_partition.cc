// Which hosts a partitioned fabric cuts off from the job (campaign_oracle.h: disconnected_hosts).
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "scenarios/studies/campaign/campaign_oracle.h"
#include "topology/routing.h"

namespace megasim::scenarios {

std::int64_t disconnected_hosts(const topo::Topology& topology, const std::vector<topo::LinkId>& failed) {
  topo::EcmpMembership members(topology.num_links());
  for (const topo::LinkId l : failed) members.remove(l);
  // Every flow between two GPUs under one rail ToR stays under it (NIC cables are not part of the
  // damage), so reachability is a matter of ToR pairs: one GPU stands for its ToR.
  std::map<topo::NodeId, topo::GpuId> gpu_of_tor;
  std::map<topo::NodeId, std::set<std::int32_t>> servers_of_tor;
  for (std::int32_t g = 0; g < topology.num_gpus(); ++g) {
    const topo::NodeId tor = topology.tor_of(topo::GpuId(g));
    gpu_of_tor.emplace(tor, topo::GpuId(g));
    servers_of_tor[tor].insert(topology.server_of(topo::GpuId(g)).value);
  }
  std::vector<topo::NodeId> tors;
  for (const auto& [tor, gpu] : gpu_of_tor) tors.push_back(tor);
  const std::size_t n = tors.size();
  const auto first = [](topo::NodeId, std::span<const topo::LinkId>) { return std::uint32_t{0}; };
  // joined[a][b]: flows go both ways between ToRs a and b.
  std::vector<std::vector<bool>> joined(n, std::vector<bool>(n, true));
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a != b && !topo::route(topology, gpu_of_tor[tors[a]], gpu_of_tor[tors[b]], members, first)) {
        joined[a][b] = joined[b][a] = false;
      }
    }
  }
  std::vector<std::size_t> unreached(n, 0);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) unreached[a] += joined[a][b] ? 0U : 1U;
  }
  // Greedily, the ToR that reaches the fewest others (the first by node id on a tie) leaves the job,
  // until the ToRs left reach each other: a real scheduler keeps the largest connected part.
  std::vector<bool> evicted(n, false);
  for (;;) {
    std::size_t worst = n;
    for (std::size_t a = 0; a < n; ++a) {
      if (!evicted[a] && unreached[a] > 0 && (worst == n || unreached[a] > unreached[worst])) worst = a;
    }
    if (worst == n) break;
    evicted[worst] = true;
    for (std::size_t a = 0; a < n; ++a) {
      if (!evicted[a] && !joined[a][worst]) --unreached[a];
    }
  }
  std::set<std::int32_t> hosts;
  for (std::size_t a = 0; a < n; ++a) {
    if (evicted[a]) hosts.insert(servers_of_tor[tors[a]].begin(), servers_of_tor[tors[a]].end());
  }
  return static_cast<std::int64_t>(hosts.size());
}

}  // namespace megasim::scenarios
