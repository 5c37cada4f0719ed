// Which ranks of a job share a host, from each rank's host name, and the two kinds of group a real
// backend measures links over (DESIGN.md "Real backends": calibrate measures per link type):
//  - intra-node: all ranks of one host (NVLink between GPUs, shared memory between CPU processes);
//  - inter-node: one rank per host, the ranks of the same local index (each GPU's own NIC, as a
//    rail-optimised cluster wires them), defined when the job spans two or more hosts.
// Pure: the backends exchange the names (an NCCL all-gather of fixed-size names, or MPI) and split
// their communicators with the colors and keys given here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace megasim::backend {

enum class HostLink : std::uint8_t { kIntraNode, kInterNode };
// "intra-node", "inter-node".
std::string_view to_string(HostLink link);

struct HostGroups {
  std::vector<std::string> hosts;  // distinct names, in order of first appearance
  std::vector<int> host_of;        // per world rank: index into `hosts`
  std::vector<int> local_index;    // per world rank: its place among its host's ranks (world order)
  int ranks_per_host = 0;          // the same on every host (checked)

  [[nodiscard]] int host_count() const { return static_cast<int>(hosts.size()); }
  [[nodiscard]] int world_size() const { return static_cast<int>(host_of.size()); }
  // Whether a group of this kind has two or more members (intra-node: two ranks on a host;
  // inter-node: two hosts).
  [[nodiscard]] bool measurable(HostLink link) const;
  // Members of `rank`'s group of this kind.
  [[nodiscard]] int members(HostLink link) const;
  // The communicator split: ranks with the same color form a group, ordered by key. Intra-node:
  // color = host, key = local index; inter-node: color = local index, key = host.
  [[nodiscard]] int color(HostLink link, int rank) const;
  [[nodiscard]] int key(HostLink link, int rank) const;
  // The world rank with local index `local` on host `host`.
  [[nodiscard]] int world_rank(int host, int local) const;
  // The two world ranks a point-to-point probe of this kind runs between: local ranks 0 and 1 of
  // the first host (intra-node), local rank 0 of the first and second hosts (inter-node). Requires
  // measurable(link).
  [[nodiscard]] std::pair<int, int> ping_pong_pair(HostLink link) const;
};

// Groups the ranks of a job by host name (one name per world rank, in rank order). Throws
// sim::ConfigError("cluster.gpus_per_server") naming two hosts and their counts when hosts hold
// different numbers of ranks (the groups of one local index would then differ in size), and
// sim::ConfigError("cluster.gpus") for an empty job or an empty name.
HostGroups group_by_host(std::span<const std::string> host_of_rank);

}  // namespace megasim::backend
