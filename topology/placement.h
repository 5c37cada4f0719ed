// Rank -> GPU placement. Megatron numbers ranks with tensor parallelism innermost (order tp-dp-pp),
// so placing rank r on GPU r fills servers in order and keeps a TP group (size dividing the server)
// inside one server. Other policies (topology-aware, scattered) build on the same mapping type.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::topo {

// placement[r] is the GPU of rank r.
using Placement = std::vector<GpuId>;

// Rank r on GPU r. Throws ConfigError when the job needs more GPUs than the cluster has.
Placement contiguous_placement(const Topology& topo, std::int64_t num_ranks);

}  // namespace megasim::topo
