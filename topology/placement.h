// Rank -> GPU placement. Megatron numbers ranks with tensor parallelism innermost (order tp-dp-pp,
// rank = tp + T*(dp + D*pp)), so placing rank r on GPU r fills servers in order and keeps a TP group
// (size dividing the server) inside one server. The what-if policies keep that inner structure and
// only choose which physical server holds each server-sized block of ranks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::topo {

// placement[r] is the GPU of rank r.
using Placement = std::vector<GpuId>;

// Rank r on GPU r. Throws ConfigError when the job needs more GPUs than the cluster has.
Placement contiguous_placement(const Topology& topo, std::int64_t num_ranks);

// How a job's ranks are laid onto the cluster's servers. Every policy cuts the rank sequence into
// server blocks (ranks [k*G, (k+1)*G) with G = gpus_per_server, the last block possibly short) and
// puts rank r of block k on local GPU index r mod G of one physical server S(k), with S injective.
// So a TP group (T divides G) stays inside one server on consecutive local GPUs, and a DP group keeps
// one GPU per rail per server exactly as Megatron's order gives it; only S differs:
//  - kContiguous: S(k) = k, i.e. rank r on GPU r.
//  - kTopologyAware: MegaScale (NSDI'24 §3.4/§4) keeps the data-intensive DP groups under the same
//    ToR set, building DP groups before PP groups. Stage p (its ranks are [p*T*D, (p+1)*T*D)) holds
//    all of its DP groups, and each of its m = T*D/G servers holds a member of every one of them, so
//    the DP span of a stage is the number of rail-ToR groups its servers touch. Stages are placed in
//    order on consecutive servers from a cursor (so pods fill in order); a stage whose m servers from
//    the cursor would touch more than ceil(m / servers_per_group) groups instead starts at the next
//    group boundary, if the servers skipped still fit in the cluster's spare servers (num_servers
//    minus the job's); otherwise it stays at the cursor (tightest packing). Skipped servers stay
//    unused. This never fails when contiguous fits, and the largest DP span is never above
//    contiguous's (any run of m servers touches ceil(m/g) or ceil(m/g)+1 groups, and while every
//    contiguous stage is minimal the two placements coincide). When T*D is not a multiple of G
//    (stages share servers) the policy is contiguous.
//  - kScattered: a fragmented cluster. The servers are shuffled by Fisher-Yates with the stream
//    "placement.scatter" of sim::RngStreams(seed), and S(k) is the k-th server of the shuffle: a
//    deterministic function of the seed.
enum class PlacementPolicy : std::uint8_t { kContiguous, kTopologyAware, kScattered };

// Names "contiguous", "topology_aware", "scattered". Parsing an unknown name throws ConfigError(key).
std::string_view to_string(PlacementPolicy policy);
PlacementPolicy parse_placement_policy(std::string_view text, std::string_view key);

// The parallel sizes of a plan; the job's world (ranks) is tensor * data * pipeline, which may be
// smaller than the cluster (the rest of its GPUs stay unused).
struct PlanShape {
  std::int64_t tensor = 1;
  std::int64_t data = 1;
  std::int64_t pipeline = 1;

  [[nodiscard]] std::int64_t world() const { return tensor * data * pipeline; }
};

// Throws ConfigError: "plan.tensor_model_parallel_size" (tensor < 1, or not dividing
// gpus_per_server), "plan.data_parallel_size" / "plan.pipeline_model_parallel_size" (< 1), and
// "cluster.gpus" when the world exceeds the cluster's GPUs. seed is used by kScattered only.
Placement make_placement(const Topology& topo, const PlanShape& shape, PlacementPolicy policy, std::uint64_t seed);

}  // namespace megasim::topo
