// Times of the collectives compute tasks run over groups that span servers (an MoE dispatch across
// nodes, a CP group's K/V exchange), each played beside its peers. A stage's replicas run the same
// compute task at about the same time (one pipeline schedule, met at every DP step) and a unit's TP
// ranks run it together, so every group of one kind in a stage starts the same collective at
// once: their flows share the fabric's links, and ECMP collisions between groups show, not only
// those within one. The groups of a stage are played together from t = 0 on a fresh fabric and each
// gets its own job's time. Stages are apart (the pipeline offsets them), and so is the iteration's
// own traffic (DP, PP), which these collectives do not see.
//
// Bound: a play holds consecutive groups (by first GPU, so neighbours under the same switches) up to
// kMaxPeerFlows concurrent flows, at least one group: beyond that, windows of groups are played
// apart. A group's flows at once are its plan's widest phase (one flow per channel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "models/workload.h"
#include "sim/time.h"
#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::backend {

inline constexpr std::size_t kMaxPeerFlows = std::size_t{1} << 16;

class PeerCollectiveTimes {
 public:
  // topo must outlive this object; max_flows (>= 1) bounds a play (tests use small windows).
  PeerCollectiveTimes(const topo::Topology& topo, FabricParams fabric, models::CollectiveParams params,
                      std::size_t max_flows = kMaxPeerFlows);

  // Registers a stage's groups of one kind (each in its rank order; disjoint). Returns the set's id.
  std::size_t add_set(std::vector<std::vector<topo::GpuId>> groups);

  // Time of `op` of `bytes` per member over the group of set `set` whose members are `gpus`, played
  // with its window of peers. Memoised per (set, op, bytes). `gpus` must be a group of the set.
  sim::SimTime time_ns(std::size_t set, const std::vector<topo::GpuId>& gpus, models::CollectiveOp op, double bytes);

 private:
  struct Set {
    std::vector<std::vector<topo::GpuId>> groups;
    std::map<std::vector<topo::GpuId>, std::size_t> index;
  };
  std::vector<sim::SimTime> play(const Set& set, models::CollectiveOp op, double bytes) const;

  const topo::Topology& topo_;
  FabricParams fabric_;
  models::CollectiveParams params_;
  std::size_t max_flows_;
  std::vector<Set> sets_;
  std::map<std::tuple<std::size_t, models::CollectiveOp, double>, std::vector<sim::SimTime>> times_;
};

}  // namespace megasim::backend
