// The topologies shared by the runs of one study: a sweep simulates hundreds of plans on a few
// clusters (one per point of its varied cluster keys), and Topology::build of a 12,288-GPU cluster,
// with its destruction, cost a tenth of a plan's screen.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "topology/cluster_params.h"
#include "topology/topology.h"

namespace megasim::scenarios {

// Thread-safe. Holds the topologies of the last kKept distinct clusters asked for; one asked for
// again after that is built again (a run that still holds it keeps it alive meanwhile).
class TopologyCache {
 public:
  static constexpr std::size_t kKept = 4;

  // The topology of `params`: Topology::build(params), built on first use. Throws as that does.
  std::shared_ptr<const topo::Topology> get(const topo::ClusterParams& params);

 private:
  std::mutex mutex_;
  std::deque<std::shared_ptr<const topo::Topology>> kept_;  // oldest first
};

}  // namespace megasim::scenarios
