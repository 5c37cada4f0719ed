// The groups a unit's compute tasks communicate over (workload.h's ComputeGroup), as the placement
// puts them: its TP group and, for an MoE plan, the expert-parallel, expert-tensor and
// expert-tensor-and-expert groups of a TP rank, and with context parallelism that rank's CP group.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/workload.h"
#include "topology/ids.h"

namespace megasim::backend {

inline constexpr std::size_t kComputeGroupKinds = 5;  // models::ComputeGroup's values

struct ComputeGroupGpus {
  std::vector<topo::GpuId> tensor, expert, expert_tensor, expert_tensor_and_expert, context;
  // By models::ComputeGroup: the id of the group's set of peers (peer_collective_times.h), -1 for a
  // group timed alone.
  std::array<std::int64_t, kComputeGroupKinds> peer_set{-1, -1, -1, -1, -1};
  [[nodiscard]] const std::vector<topo::GpuId>& of(models::ComputeGroup group) const;
};

// The groups of the rank at (`tp_rank`, layout data index `replica`, `stage`), each in its rank
// order; `tensor` is the unit's TP group as given. Groups the plan does not have are empty.
ComputeGroupGpus compute_groups(const models::Workload& workload, const std::vector<topo::GpuId>& placement,
                                const std::vector<topo::GpuId>& tensor, std::int64_t stage, std::int64_t replica,
                                std::int64_t tp_rank = 0);

// Every distinct group of kind `group` in `stage`, over all TP ranks and layout data indices (all
// replicas, simulated or not), ordered by their first GPU. Groups of one kind partition the stage's
// GPUs. Empty for kTensor (a TP group lies inside one server and is timed alone) and for kinds the
// plan does not have.
std::vector<std::vector<topo::GpuId>> stage_groups(const models::Workload& workload,
                                                   const std::vector<topo::GpuId>& placement, std::int64_t stage,
                                                   models::ComputeGroup group);

}  // namespace megasim::backend
