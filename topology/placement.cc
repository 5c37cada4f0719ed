#include "topology/placement.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace megasim::topo {

Placement contiguous_placement(const Topology& topo, std::int64_t num_ranks) {
  if (num_ranks < 1 || num_ranks > topo.num_gpus()) {
    throw sim::ConfigError("cluster.gpus", std::to_string(topo.num_gpus()),
                           fmt::format("at least the {} GPUs the job needs (one per rank)", num_ranks));
  }
  Placement placement;
  placement.reserve(static_cast<std::size_t>(num_ranks));
  for (std::int64_t r = 0; r < num_ranks; ++r) placement.emplace_back(static_cast<std::int32_t>(r));
  return placement;
}

}  // namespace megasim::topo
