// Private state of the Fabric, shared by its implementation files:
//   fabric.cc          public API, parameters
//   fabric_flows.cc    flow start and completion, progress accounting, link <-> flow lists
//   fabric_flow_routes.cc  a flow's route from the route cache (fabric_route_cache.h) or routed
//   fabric_routing.cc  QP numbering and the routes of lanes (ECMP, spray, adaptive), re-routing
//   fabric_rates.cc    batched max-min recomputation, completion and stall-timeout scheduling
//   fabric_local_solve.cc  the exact re-solve of the region around a change
//   fabric_sharing.cc  which links each flow shares, with one other flow (pair groups) or more,
//                      and the caps of those it crosses alone; fabric_sharing_check.cc recounts them
//   fabric_removal.cc  exact shortcuts: completions and starts that leave the other rates as they are
//   fabric_links.cc    link capacity, failures, recovery and degradation
// The per-link records (occupants, flow lists, pair groups, private caps) are in fabric_link_lists.h.
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
#include "backend/sim/max_min.h"

namespace megasim::backend {

// Relative tolerance of the exact shortcuts' saturation and rate comparisons (fabric_removal.cc,
// fabric_local_solve.cc), far above the solver's rounding and far below any physical difference.
inline constexpr double kRateTolerance = 1e-9;

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
  [[nodiscard]] bool is_bottleneck_of(topo::LinkId l, std::uint32_t slot, std::uint32_t leaving = kNoSlot) const;
  [[nodiscard]] bool is_pair_bottleneck_of(std::int32_t pair, std::uint32_t slot) const;
  bool has_bottleneck_without(std::uint32_t slot, std::uint32_t leaving);
  // Whether the flow in `slot` has a bottleneck: it runs at the cap of a link it crosses alone, or
  // pair_binds(group id) holds for one of its pair groups, or link_binds(link) for one of its shared
  // links. The hint is tried first (a link hint only while the link is still shared: a paired link's
  // list holds its partner's old rate), and the constraint found becomes the next hint.
  template <typename PairBinds, typename LinkBinds>
  bool find_bottleneck(std::uint32_t slot, PairBinds pair_binds, LinkBinds link_binds);
  void settle(FlowState& f);
  [[nodiscard]] double remaining_now(const FlowState& f) const;
  void credit_carried(FlowState& f);
  void install_usages(std::uint32_t slot, bool mark_links_dirty = true);
  void build_usages(FlowState& f);
  void enter_usages(std::uint32_t slot, bool mark_links_dirty);
  void prefetch_link_records(std::span<const topo::LinkId> route_links) const;
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
  [[nodiscard]] LinkFlowsView flows_on(topo::LinkId l) const;
  // The entry of a link's lone flow (precondition: the occupant names one).
  [[nodiscard]] LinkFlowEntry lone_entry(const LinkOccupant& o) const;
  // The list of a link two or more flows share (precondition).
  [[nodiscard]] LinkFlowList& listed_flows(topo::LinkId l) { return flow_lists[occupants[l.index()].usage]; }
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
  // fabric_sharing.cc
  [[nodiscard]] double usage_cap(const Usage& u) const;
  // Classifies usages as the flows on their link change (enter_usages, uninstall_usages): private
  // while the link cannot bind (one flow, or a slack list), else paired or shared.
  void on_link_joined(std::uint32_t slot, std::uint32_t usage);
  void on_link_left(std::uint32_t list, topo::LinkId l);
  // A listed link turns binding (its flows' usages there pair or share) or slack (they turn private).
  void classify_binding(std::uint32_t list);
  void classify_slack(std::uint32_t list);
  // After the caps of a flow's usages changed: its rate_bound, the bounds in its links' lists and
  // the classes of those lists (other than `skip`'s).
  void refresh_rate_bound(std::uint32_t slot, topo::LinkId skip);
  void mark_shared(std::uint32_t slot, std::uint32_t usage);
  void mark_private(std::uint32_t slot, std::uint32_t usage);
  void pair_link(const LinkFlowEntry& x, const LinkFlowEntry& y);
  void unpair_link(const LinkFlowEntry& x, const LinkFlowEntry& y);
  void add_shared(std::uint32_t slot, std::uint32_t usage);
  void recount_totals(std::uint32_t list);  // shared_totals[list] from the list's entries
  void remove_shared(std::uint32_t slot, std::uint32_t usage);
  void before_capacity_change(topo::LinkId l);
  void after_capacity_change(topo::LinkId l);
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
  [[nodiscard]] std::string check_sharing() const;  // fabric_sharing_check.cc

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
  std::vector<LinkMark> link_mark;             // by link, see LinkMark
  std::vector<LinkOccupant> occupants;         // by link: its lone flow, or its list
  std::vector<LinkFlowList> flow_lists;        // the lists of the links two or more flows share
  std::vector<SharedTotals> shared_totals;     // by list: valid while its link is shared
  std::vector<ListClass> list_class;           // by list: whether its link binds its flows
  std::vector<std::uint32_t> free_flow_lists;  // unused lists, the last freed last
  FlowTable flows;
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
  // Pair groups by id (ids reused through free_pairs), listed in their flows' `pairs`.
  std::vector<PairGroup> pair_groups;
  std::vector<LinkMark> pair_mark;  // by group id: region stamps, as link_mark
  std::vector<std::uint32_t> free_pairs;
  RouteCache route_cache;
};

inline LinkFlowsView Fabric::Impl::flows_on(topo::LinkId l) const {
  const LinkOccupant& o = occupants[l.index()];
  if (o.slot == LinkOccupant::kListed) {
    const LinkFlowList& list = flow_lists[o.usage];
    return LinkFlowsView(std::span<const LinkFlowEntry>(list.data(), list.size()));
  }
  if (o.slot == kNoSlot) return {};
  return LinkFlowsView(lone_entry(o));
}

inline LinkFlowEntry Fabric::Impl::lone_entry(const LinkOccupant& o) const {
  const FlowState& f = flows[o.slot];
  const double weight = f.usages[o.usage].weight;
  return {o.slot, o.usage, weight, f.rate, weight * f.rate_bound};
}

template <typename PairBinds, typename LinkBinds>
bool Fabric::Impl::find_bottleneck(std::uint32_t slot, PairBinds pair_binds, LinkBinds link_binds) {
  FlowState& g = flows[slot];
  if (g.rate >= g.private_caps.min() * (1 - kRateTolerance)) return true;  // at its cap
  const BottleneckHint hint = g.bottleneck;
  if (hint.pair >= 0 ? pair_groups[static_cast<std::size_t>(hint.pair)].has(slot) &&
                           pair_binds(static_cast<std::uint32_t>(hint.pair))
                     : hint.usage >= 0 && g.usages[static_cast<std::size_t>(hint.usage)].shared_index >= 0 &&
                           link_binds(g.usages[static_cast<std::size_t>(hint.usage)].link)) {
    return true;
  }
  for (const std::uint32_t pair : g.pairs) {
    if (static_cast<std::int32_t>(pair) != hint.pair && pair_binds(pair)) {
      g.bottleneck = {-1, static_cast<std::int32_t>(pair)};
      return true;
    }
  }
  for (const SharedUsage& k : g.shared) {
    if (static_cast<std::int32_t>(k.usage) != hint.usage && link_binds(k.link)) {
      g.bottleneck = {static_cast<std::int32_t>(k.usage), -1};
      return true;
    }
  }
  return false;
}

}  // namespace megasim::backend
