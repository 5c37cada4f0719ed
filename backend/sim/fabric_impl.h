// The Fabric's coordinator: it owns one of each part and runs the changes that span them.
// The parts, each with private state and the one invariant its check() verifies:
//   LinkTable     fabric_link_table.h   link capacities, failures, degradation, dirty marks
//   FlowTable     fabric_flow_table.h   flow records by slot, slot reuse, id -> slot
//   RouteCache    fabric_route_cache.h  cached routes by first lane, their pending bytes
//   SharingIndex  fabric_sharing_index.h  who shares which link: lists, totals, pair groups, and
//                 each flow's classification of its links (fabric_sharing.cc explains it)
// The coordinator's own files:
//   fabric.cc          public API, parameters
//   fabric_flows.cc    flow start and completion, progress accounting
//   fabric_flow_routes.cc  a flow's route from the route cache or routed, owned, released
//   fabric_routing.cc  QP numbering and the routes of lanes (ECMP, spray, adaptive), re-routing
//   fabric_rates.cc    batched max-min recomputation, completion and stall-timeout scheduling
//   fabric_local_solve.cc  the exact re-solve of the region around a change (its scratch below)
//   fabric_removal.cc  exact shortcuts: completions and starts that leave the other rates as they are
//   fabric_links.cc    link failures, recovery and degradation, in the order the parts need them
//   fabric_check.cc    every part's check(), and the flows' use of their routes' usage arrays
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "backend/sim/fabric.h"
#include "backend/sim/fabric_flow_table.h"
#include "backend/sim/fabric_link_lists.h"
#include "backend/sim/fabric_link_table.h"
#include "backend/sim/fabric_route.h"
#include "backend/sim/fabric_route_cache.h"
#include "backend/sim/fabric_sharing_index.h"
#include "backend/sim/max_min.h"

namespace megasim::backend {

// One link of a region solve (fabric_local_solve.cc): a shared link, or a pair group standing for
// its links. Everything a round reads and writes about the link, in one record.
struct RegionLink {
  topo::LinkId link;                  // the shared link; invalid for a pair group
  std::int32_t pair = -1;             // the pair group; -1 for a real link
  std::uint32_t inside = 0;           // how many of its flows are in R
  std::uint32_t inside_unsolved = 0;  // real link: R's flows there with rate <= 0
  double capacity = 0;                // its capacity now (a pair group: its smallest cap)
  double inside_load = 0;             // real link: load of R's flows at their current rates
  double outside_load = 0;            // load of the flows outside R, current rates
  double outside_max = 0;             // their largest rate, or a bound on it (outside_fastest)
  double r_load = 0;                  // load of R's flows at their new rates
  double r_max = 0;                   // their largest new rate
  bool outside_max_exact = true;      // outside_max is the exact largest, not a bound
  bool changed = false;               // some R flow on the link changes rate
  double residual = 0;                // its capacity less the outside load (build_region_problem)
  static constexpr std::uint32_t kFolded = 0xFFFFFFFFu;
  std::uint32_t problem_link = kFolded;  // its link in the max-min problem, or kFolded into a flow's cap
  // What the outside flows' checks read of the link (its R flows and their loads and largest rate)
  // as of the last round's checks: a round in which these are the same gives the same verdicts.
  bool checked = false;  // a round has checked with the link in the region
  bool checked_changed = false;
  std::uint32_t checked_inside = 0;
  double checked_r_load = 0;
  double checked_r_max = 0;
};

// Working memory of the region solve, indexed by the region's local link numbers (LinkMark::local).
struct RegionScratch {
  std::vector<RegionLink> links;
  // Per flow of R, in the order of component_flows, recorded as it joins (none of it changes during
  // the solve): its region links and weights (shared links, then pair groups at weight 1), in
  // usages[usage_begin[i] .. usage_begin[i + 1]); its rate before the solve; its cap from the links
  // it crosses alone.
  struct Usage {
    std::uint32_t local;
    double weight;
  };
  std::vector<Usage> usages;
  std::vector<std::uint32_t> usage_begin{0};
  std::vector<double> old_rates;
  std::vector<double> caps;
  std::vector<std::uint32_t> joining;  // flows to add to R after a failed check
  std::uint32_t check_stamp = 0;
};

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
  void collect_component();
  // Starts a recomputation epoch: stamps of links and flows from earlier epochs stop matching.
  void next_epoch();
  // fabric_local_solve.cc: solves the region around the dirty links into component_flows / rates;
  // false when the whole component must be solved instead.
  bool recompute_region();
  bool region_add_link(topo::LinkId l);
  bool region_add_pair(std::uint32_t pair);
  std::uint32_t region_append(topo::LinkId l, std::int32_t pair, double capacity);
  bool region_add_flow(std::uint32_t slot);
  // The largest current rate among the flows outside R on real region link `local`: a bound when
  // that is at most `limit`, else exact (scanned once per round).
  double outside_fastest(std::uint32_t local, double limit);
  bool build_region_problem();
  void region_loads();
  [[nodiscard]] bool region_link_saturated(std::uint32_t local) const;
  bool check_region_flow(std::size_t index);
  bool outside_flow_keeps_bottleneck(std::uint32_t slot);
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
  std::vector<LinkMark> link_mark;  // by link, see LinkMark
  FlowTable flows;
  SharingIndex sharing;             // over flows and links
  std::vector<FlowRecord> records;  // when params.keep_flow_records
  std::uint64_t completed = 0;      // flows completed
  std::vector<FlowId> stuck_flows;

  bool recompute_pending = false;
  sim::EventHandle recompute_event;
  std::uint64_t recomputations = 0;
  std::uint32_t epoch = 0;
  std::uint32_t removal_epoch = 0;  // stamps of removal_keeps_rates
  std::vector<std::uint32_t> removal_flow_mark;
  std::uint64_t skipped_recomputations = 0;
  std::uint64_t region_recomputations = 0;
  std::uint64_t region_rounds = 0;
  std::uint64_t deepest_region_rounds = 0;
  std::size_t component_usages = 0;  // of the last whole-component solve (fabric_local_solve.cc)
  double admitted_rate = 0;
  std::vector<sim::EventHandle> link_events;  // detections and flaps, cancelled on destruction
  std::size_t link_events_after_prune = 0;

  std::function<void(FlowId)> stall_callback;
  std::function<void()> recompute_observer;

  // Scratch space reused across calls (no per-event allocation in steady state).
  MaxMinSolver solver;
  MaxMinProblem problem;
  std::vector<double> rates;
  std::vector<std::uint32_t> component_flows;
  std::vector<topo::LinkId> bfs_stack;
  std::vector<Segment> segment_scratch;
  std::vector<Usage> usage_scratch;
  RegionScratch region;
  std::vector<LinkMark> pair_mark;  // by pair group id: region stamps, as link_mark (grown as ids are)
  RouteCache route_cache;
};

}  // namespace megasim::backend
