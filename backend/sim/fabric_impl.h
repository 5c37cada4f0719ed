// The Fabric's coordinator: it owns one of each part and runs the changes that span them.
// The parts, each with private state and the one invariant its check() verifies:
//   LinkTable     fabric_link_table.h   link capacities, failures, degradation, dirty marks
//   FlowTable     fabric_flow_table.h   flow records by slot, slot reuse, id -> slot
//   RouteCache    fabric_route_cache.h  cached routes by first lane, their pending bytes
//   SharingIndex  fabric_sharing_index.h  who shares which link: lists, totals, pair groups, and
//                 each flow's classification of its links (fabric_sharing.cc explains it)
//   RegionSolver  fabric_region_solver.h  the max-min solve of the region around a change, or of
//                 the component of the dirty links: their stamps and scratch, the new rates
//   SlotStamps    fabric_slot_stamps.h  the neighbours removal_keeps_rates has checked
// The coordinator's own files:
//   fabric.cc          public API, parameters
//   fabric_flows.cc    flow start and completion, progress accounting
//   fabric_flow_routes.cc  a flow's route from the route cache or routed, owned, released
//   fabric_routing.cc  QP numbering and the routes of lanes (ECMP, spray, adaptive), re-routing
//   fabric_rates.cc    batched max-min recomputation (by the RegionSolver), the new rates applied,
//                      completion and stall-timeout scheduling
//   fabric_removal.cc  exact shortcuts: completions and starts that leave the other rates as they are
//   fabric_links.cc    link failures, recovery and degradation, in the order the parts need them
//   fabric_check.cc    every part's check(), and the flows' use of their routes' usage arrays
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/sim/fabric.h"
#include "backend/sim/fabric_flow_table.h"
#include "backend/sim/fabric_link_table.h"
#include "backend/sim/fabric_region_solver.h"
#include "backend/sim/fabric_route.h"
#include "backend/sim/fabric_route_cache.h"
#include "backend/sim/fabric_sharing_index.h"
#include "backend/sim/fabric_slot_stamps.h"

namespace megasim::backend {

struct Fabric::Impl {
  Impl(sim::Simulator& s, const topo::Topology& t, FabricParams p);
  ~Impl();

  // fabric_flows.cc
  FlowId start_flow(const FlowSpec& spec);
  void complete(std::uint32_t slot);
  // fabric_removal.cc: whether removing the flow leaves every other rate max-min fair as it is.
  bool removal_keeps_rates(std::uint32_t slot);
  // Whether a new flow fits in spare capacity without changing any other rate; sets admitted_rate.
  bool admit_without_resolve(std::uint32_t slot);
  bool has_bottleneck_without(std::uint32_t slot, std::uint32_t leaving);
  void settle(FlowState& f);
  [[nodiscard]] double remaining_now(const FlowState& f) const;
  void credit_carried(FlowState& f);
  void install_usages(std::uint32_t slot, bool mark_links_dirty = true);
  void build_usages(FlowState& f);
  // Credits the cached routes' pending bytes to their links, gives the flows their own copies of
  // their routes and empties the cache.
  void clear_route_cache();
  // Copies the cached lanes and segments (and usages, if borrowed) into the flow, detaches it.
  void own_route(FlowState& f);
  // Ends the flow's use of its usages: returns a borrowed array to its route, empties its own.
  void release_usages(FlowState& f);
  // Routes the flow's lanes (from route_cache when it has them) and sets its usages.
  void route_flow(FlowState& f, const std::vector<FlowLane>& lanes, RouteHint* hint);
  void uninstall_usages(std::uint32_t slot, bool mark_links_dirty = true);
  [[nodiscard]] sim::SimTime path_latency(const FlowState& f) const;

  // fabric_routing.cc
  LaneResult route_lane(const FlowLane& lane, std::vector<Segment>& out);
  bool reroute_lane(const FlowState& f, const LaneRoute& lane, std::vector<Segment>& out);
  void reroute(std::uint32_t slot);
  bool spray_lane(const FlowLane& lane, bool fallback, std::vector<Segment>& out);
  [[nodiscard]] std::optional<topo::Path> qp_path(const FlowLane& lane, int qp, const topo::EcmpMembership& m) const;
  [[nodiscard]] topo::Path qp_path_or_fallback(const FlowLane& lane, int qp, bool& stuck) const;
  void add_segment(const Segment& s, std::vector<Segment>& out);
  void drop_segment_load(const Segment& s);
  [[nodiscard]] bool uses_removed_link(const topo::Path& p) const;

  // fabric_rates.cc
  void request_recompute();
  void recompute();
  void apply_rate(std::uint32_t slot, double rate);
  [[nodiscard]] sim::SimTime completion_time(double remaining, double rate) const;
  void on_stall_check(std::uint32_t slot, FlowId id);
  [[nodiscard]] std::string check_rates() const;
  [[nodiscard]] std::string check_state() const;  // fabric_check.cc: every part's check()

  // fabric_links.cc
  void set_link_down(topo::LinkId l);
  void set_link_failed(topo::LinkId l);
  void set_link_up(topo::LinkId l);
  void set_speed_factor(topo::LinkId l, double factor);
  void on_failure_detected(topo::LinkId l, std::uint32_t interval);
  void retry_stuck_flows();
  void track_link_event(sim::EventHandle h);

  sim::Simulator& sim;
  const topo::Topology& topo;
  FabricParams params;
  topo::EcmpHasher hasher;
  topo::EcmpMembership members;
  topo::EcmpMembership all_links;  // never changes: routes of last resort over dead links

  LinkTable links;
  FlowTable flows;
  SharingIndex sharing;             // over flows and links
  RegionSolver solver;              // over links, flows and sharing
  std::vector<FlowRecord> records;  // when params.keep_flow_records
  std::uint64_t completed = 0;      // flows completed
  std::vector<FlowId> stuck_flows;

  bool recompute_pending = false;
  sim::EventHandle recompute_event;
  std::uint64_t recomputations = 0;
  SlotStamps removal_seen;  // removal_keeps_rates: the neighbours it has checked
  std::uint64_t skipped_recomputations = 0;
  std::uint64_t region_recomputations = 0;
  double admitted_rate = 0;
  std::vector<sim::EventHandle> link_events;  // detections and flaps, cancelled on destruction
  std::size_t link_events_after_prune = 0;

  std::function<void(FlowId)> stall_callback;
  std::function<void()> recompute_observer;

  // Scratch space reused across calls (no per-event allocation in steady state).
  std::vector<Segment> segment_scratch;
  std::vector<Usage> usage_scratch;
  RouteCache route_cache;
};

}  // namespace megasim::backend
