// Strong ids of the cluster graph. All are dense indices: GpuId g is also NodeId g (GPUs are the
// first nodes), ServerId s holds GPUs [s*gpus_per_server, (s+1)*gpus_per_server).
#pragma once

#include "sim/strong_id.h"

namespace megasim::topo {

struct GpuTag {};
struct ServerTag {};
struct NodeTag {};
struct LinkTag {};

using GpuId = sim::StrongId<GpuTag>;
using ServerId = sim::StrongId<ServerTag>;
using NodeId = sim::StrongId<NodeTag>;
using LinkId = sim::StrongId<LinkTag>;

}  // namespace megasim::topo
