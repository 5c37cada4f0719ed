// The flow-level network. Every transfer is a flow over concrete paths of the Clos; link bandwidth
// is shared max-min fairly among the flows crossing it, and rates are recomputed when flows start or
// end or a link changes. Recomputation is batched per instant (all flows started at the same
// simulated time cost one solve) and limited to the region around the change: the flows on the
// changed links, grown until the bottleneck conditions of max-min fairness hold for every flow it
// could affect (fabric_local_solve.cc), else the connected part of the fabric that changed.
//
// A flow has one or more lanes that move at one common rate: a point-to-point transfer is one lane;
// a pipelined NCCL ring channel is one flow whose lanes are the ring's edges, because chunks advance
// around the ring only as fast as its slowest edge (NCCL's pipelined ring; see models/collective.h).
// Each lane of a flow is split over qps_per_connection queue pairs; each QP is hashed separately.
//
// Timing semantics (exact, so tests can derive completion times by hand):
// - start_flow, completions and link changes mark the links they touch dirty; one rate recomputation
//   is scheduled at sim.now() (it runs after the events already queued for this instant), so every
//   change of an instant is solved together. It solves max-min (backend/sim/max_min.h) over the
//   region around the dirty links with the other flows' loads held, checked exact; when that check
//   cannot be completed, over the connected component reachable from the dirty links. Both give the
//   same rates (the max-min allocation is unique), up to rounding.
// - A flow whose rate changes is settled first: remaining -= old_rate * (now - last_update). Its
//   completion is then rescheduled at now + ceil(remaining / rate) ns. Rate 0 (a link on every
//   remaining path is down) schedules no completion: the flow is stalled.
// - At completion the bytes are credited to the links that carried them, the flow is removed (its links
//   recomputed) and on_complete runs after the flow's path latency (the longest lane's sum of link
//   latencies; for spraying the byte-weighted mean over the sprayed paths) when add_path_latency;
//   or on_sent runs at once, told when the last byte will be delivered.
// The Fabric must outlive the simulation run that uses it (pending events refer to it), and the
// Simulator must outlive the Fabric: its destructor cancels the events it still has pending.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/sim/fabric_params.h"
#include "sim/simulator.h"
#include "sim/strong_id.h"
#include "sim/time.h"
#include "topology/ecmp.h"
#include "topology/routing.h"
#include "topology/topology.h"

namespace megasim::backend {

struct FlowTag {};
using FlowId = sim::StrongId<FlowTag>;

struct FlowLane {
  topo::GpuId src;
  topo::GpuId dst;
  std::uint32_t connection = 0;  // tells apart connections between the same GPUs (NCCL channel)
  bool operator==(const FlowLane&) const = default;
};

struct CachedRoute;  // fabric_route.h

// Where start_flow found a flow's route in its route cache, kept by a caller that starts flows over
// the same lanes again and again (a pipeline's transfers between two stages): handed back, it spares
// the cache lookup and the comparison of the lanes. A hint from before the cache was last cleared
// (a link changed) is ignored.
struct RouteHint {
  CachedRoute* route = nullptr;
  std::uint64_t generation = 0;
};

struct FlowSpec {
  std::vector<FlowLane> lanes;   // at least one; src != dst in each
  double bytes_per_lane = 0;     // > 0
  bool add_path_latency = true;  // completion waits for the last byte to cross the longest path
  std::function<void(FlowId)> on_complete;
  // Instead of on_complete (at most one of the two is set), for a caller that waits for several
  // flows: runs when the last byte is sent, with the time it is delivered (on_complete's time), so
  // that the caller schedules one event for the lot rather than one per flow.
  std::function<void(FlowId, sim::SimTime delivered)> on_sent;
  // Optional, in and out: a hint that start_flow left here for a flow with exactly these lanes (the
  // caller's contract), and where start_flow leaves this flow's.
  RouteHint* route_hint = nullptr;
};

// The queue-pair number (24 bits, as in InfiniBand) of QP `qp` of a lane's connection: a
// deterministic hash of (seed, src, dst, connection, qp); the fabric uses seed = params.ecmp.seed.
std::uint32_t qp_number(std::uint64_t seed, const FlowLane& lane, int qp);
// The RoCEv2 5-tuple of that QP: NIC IPs, UDP source port from the QP number, port 4791, UDP.
topo::FiveTuple qp_tuple(const topo::Topology& topo, std::uint64_t seed, const FlowLane& lane, int qp);

// Appended when a flow's last byte is sent; `end` is when its last byte is delivered (plus the path
// latency when add_path_latency): when on_complete runs, or the time on_sent is told.
struct FlowRecord {
  FlowId id;
  sim::SimTime start = 0;
  sim::SimTime end = 0;
  double bytes_per_lane = 0;
  std::int32_t lanes = 0;
};

struct LinkUse {
  topo::LinkId link;
  double weight;  // bytes on this link per byte of each lane (sum over the lanes and QPs using it)
};

class Fabric {
 public:
  Fabric(sim::Simulator& sim, const topo::Topology& topo, FabricParams params);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Starts a flow at sim.now(). The flow's completion callback runs inside the simulation. The spec
  // is read, not kept (a caller may reuse it, lanes and all, for its next flow).
  FlowId start_flow(const FlowSpec& spec);

  // Link state changes take effect at sim.now(); both directions of a cable are separate links, and
  // these act on the one link given (use Topology::link(l).reverse for the other direction).
  void set_link_down(topo::LinkId link);    // capacity 0 now; removed from ECMP after the detection delay
  void set_link_failed(topo::LinkId link);  // a failure from before now: down and out of ECMP at once
  void set_link_up(topo::LinkId link);      // capacity restored and ECMP membership restored now
  void set_link_speed_factor(topo::LinkId link, double factor);  // factor in (0, 1]: degraded link
  // Convenience: schedule a down interval [at, at + duration) of both directions of a cable.
  void schedule_cable_flap(topo::LinkId link, sim::SimTime at, sim::SimTime duration);

  // Called once, with the stalled flow, when a flow exceeds params.stall_timeout_ns without progress.
  void on_stall_timeout(std::function<void(FlowId)> callback);

  // Queries.
  [[nodiscard]] std::size_t active_flows() const;
  // The active flows at rate 0 (stalled: a link of every remaining path is down), and the first lane
  // of the first of them (by slot) when there is one.
  [[nodiscard]] std::size_t stalled_flows() const;
  [[nodiscard]] std::optional<FlowLane> first_stalled_lane() const;
  [[nodiscard]] double flow_rate_bytes_per_s(FlowId id) const;              // current per-lane rate
  [[nodiscard]] double flow_remaining_bytes(FlowId id) const;               // per lane
  [[nodiscard]] std::vector<LinkUse> flow_usage(FlowId id) const;           // current links and weights
  [[nodiscard]] double link_capacity_bytes_per_s(topo::LinkId link) const;  // effective, now
  [[nodiscard]] double link_load_bytes_per_s(topo::LinkId link) const;      // sum of weight x rate
  [[nodiscard]] double link_bytes_carried(topo::LinkId link) const;         // so far
  [[nodiscard]] const std::vector<FlowRecord>& completed_flows() const;     // empty unless keep_flow_records
  [[nodiscard]] std::uint64_t completed_flow_count() const;
  [[nodiscard]] std::uint64_t rate_recomputations() const;
  // Completions whose re-solve was skipped because removing the flow provably left every other
  // rate max-min fair (fabric_removal.cc).
  [[nodiscard]] std::uint64_t skipped_recomputations() const;
  // Recomputations that solved only the region around the change (the rest solved the component).
  [[nodiscard]] std::uint64_t region_recomputations() const;
  // Rounds the region solves ran in all (each solves the region grown so far), and the most any ran,
  // counting those that gave up for the component.
  [[nodiscard]] std::uint64_t region_rounds() const;
  [[nodiscard]] std::uint64_t deepest_region_rounds() const;
  [[nodiscard]] const topo::Topology& topology() const;
  [[nodiscard]] const FabricParams& params() const;

  // Debugging and test hooks. check_rates() checks the current rates of all active flows with
  // check_max_min (relative tolerance 1e-9) and returns the first violation, or "" when they are
  // max-min fair; meaningful when no recomputation is pending (e.g. from the observer, which runs
  // after every rate recomputation).
  [[nodiscard]] std::string check_rates() const;
  void on_rates_recomputed(std::function<void()> observer);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::backend
