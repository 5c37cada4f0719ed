// Plays collective plans (models/collective.h) on the flow-level fabric. A collective waits its
// base latency, then runs its phases in order: a phase starts one fabric flow per channel (the
// channel's edges are the flow's lanes, so a ring advances at its slowest edge's rate) and ends
// when all of them complete plus its steps x step latency (the alpha part, models::phase_latency_ns).
// Results use nccl-tests' definitions: algbw = size / time, busbw = algbw x bus_bandwidth_factor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "sim/simulator.h"
#include "sim/time.h"
#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::backend {

struct CollectiveJob {
  // Not null. Shared: the executor plans each distinct DP collective once and runs it many times.
  std::shared_ptr<const models::CollectivePlan> plan;
  std::vector<topo::GpuId> members;  // member i's GPU; plan.group_size of them, all distinct
  // The NCCL communicator: collectives on one communicator reuse its connections (QPs) and so hash
  // onto the same paths every time, as NCCL's do. Negative: a fresh communicator for this job only.
  std::int64_t communicator = -1;
};

struct CollectiveResult {
  sim::SimTime start_ns = 0;
  sim::SimTime end_ns = 0;
  double time_s = 0;
  double algbw_gbytes_per_s = 0;  // 1 GB = 1e9 bytes; 0 when time_s is 0
  double busbw_gbytes_per_s = 0;
};

// The connection number the fabric sees for a channel of a communicator: communicator x
// models::kMaxConnectionsPerCollective + channel.connection (mod 2^32), so concurrent collectives on
// different communicators use distinct QPs.
std::uint32_t fabric_connection(std::uint64_t communicator, std::uint32_t channel_connection);

class CollectiveRunner {
 public:
  // sim and fabric must outlive the runner; params are checked with models::validate.
  CollectiveRunner(sim::Simulator& sim, Fabric& fabric, models::CollectiveParams params);
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Starts the collective at sim.now(); on_done runs inside the simulation when it ends.
  void start(CollectiveJob job, std::function<void(const CollectiveResult&)> on_done);

  [[nodiscard]] std::size_t active() const { return active_; }
  [[nodiscard]] const models::CollectiveParams& params() const { return params_; }

 private:
  struct Running;
  void start_phase(std::size_t slot);
  void on_flow_done(std::size_t slot);
  void finish(std::size_t slot);

  sim::Simulator& sim_;
  Fabric& fabric_;
  models::CollectiveParams params_;
  std::vector<Running> running_;  // slots, reused through free_
  std::vector<std::size_t> free_;
  std::size_t active_ = 0;
  std::uint64_t next_private_communicator_ = 0;
};

// Member i's server index, the input plan_collective wants for a group placed on `gpus`.
std::vector<std::int64_t> servers_of(const topo::Topology& topo, std::span<const topo::GpuId> gpus);

// Runs `jobs` on a fresh simulator and fabric, all starting at t = 0, to completion; results are in
// job order. Jobs with a negative communicator get the communicator of their index.
std::vector<CollectiveResult> run_concurrently(const topo::Topology& topo, const FabricParams& fabric_params,
                                               const models::CollectiveParams& params,
                                               std::span<const CollectiveJob> jobs);

}  // namespace megasim::backend
