// Time of tensor-parallel collectives. A TP group lives inside one server (TP divides the server
// size), where every GPU has its own NVLink port to the NVSwitch at one common rate and nothing else
// crosses those ports during a compute task. There the fabric's answer has a closed form, so the
// executor need not start millions of NVLink flows: a collective takes its base latency, then per
// phase the bytes of a channel's edge over its share of an NVLink port (the port's rate divided by
// the most lanes of the phase that leave or enter one GPU), rounded up to a whole ns as the fabric
// rounds a flow's completion, plus the phase's step latency. That is exactly what CollectiveRunner
// on the Fabric gives for the group alone (tests/backend check it). Groups spanning servers are
// played on a fresh fabric instead, beside their stage's peers (peer_collective_times.h).
#pragma once

#include <span>
#include <vector>

#include "backend/sim/compute_groups.h"
#include "backend/sim/fabric.h"
#include "backend/sim/peer_collective_times.h"
#include "models/collective.h"
#include "models/workload.h"
#include "sim/time.h"
#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::backend {

// Fast path: `plan` over members that all sit in one server, each NVLink port moving
// `nvlink_bytes_per_s` (nominal x nvlink_efficiency) each way.
sim::SimTime single_server_collective_time_ns(const models::CollectivePlan& plan,
                                              const models::CollectiveParams& params, double nvlink_bytes_per_s);

// Achievable NVLink rate of `gpu`'s port in bytes/s, as the fabric sees it.
double nvlink_bytes_per_s(const topo::Topology& topo, const FabricParams& fabric, topo::GpuId gpu);

// Whether every GPU of `gpus` sits in the same server.
bool in_one_server(const topo::Topology& topo, std::span<const topo::GpuId> gpus);

// One ring collective of `bytes` over `gpus` (in TP-rank order), alone on the cluster: the fast path
// when the group is inside one server, else CollectiveRunner on a fresh fabric. 0 for one member.
sim::SimTime tp_collective_time_ns(const topo::Topology& topo, const FabricParams& fabric,
                                   const models::CollectiveParams& params, std::span<const topo::GpuId> gpus,
                                   models::CollectiveOp op, double bytes);

// Seconds of one run of a kernel list's collectives, each over its group: the calls the workload
// marks overlappable (which may hide behind the list's GEMMs) apart from the others. A collective
// over a group with a peer set (groups.peer_set, a set of `peers`) is played beside its stage's
// peers (peer_collective_times.h); any other is timed alone on the cluster.
struct TpTime {
  double plain_s = 0;
  double overlappable_s = 0;    // beside the GEMMs
  double ring_attention_s = 0;  // overlappable beside the attention blocks (OverlapWindow::kAttention)
};
std::vector<TpTime> kernel_list_tp_times(const std::vector<models::KernelList>& kernels, const topo::Topology& topo,
                                         const FabricParams& fabric, const models::CollectiveParams& params,
                                         const ComputeGroupGpus& groups, PeerCollectiveTimes* peers = nullptr);

}  // namespace megasim::backend
