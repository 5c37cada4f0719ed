// Who shares which link (Fabric::Impl's SharingIndex): by link its lone flow or its list of flows
// (with the list's totals and whether the link can bind them), the pair groups, and each flow's
// classification of its links: private (alone, or on a link that cannot bind), paired or shared
// (FlowState's usages' position / shared_index / pair, its private caps, pairs and shared list,
// which this class alone changes). fabric_sharing.cc explains the classes.
// Invariant (check()): the records and the flows' classifications are what recounting them from the
// link lists gives: every usage's class and list position, the flows' rate bounds, shared lists,
// private caps and pair groups, and the totals of the shared links.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/sim/fabric_flow_table.h"
#include "backend/sim/fabric_link_lists.h"
#include "backend/sim/fabric_link_table.h"

namespace megasim::backend {

// The cap of a usage: its link's capacity over its weight there.
inline double usage_cap(const LinkTable& links, const Usage& u) {
  return links.capacity(u.link) / u.weight;
}

// Relative tolerance of the exact shortcuts' saturation and rate comparisons (fabric_removal.cc,
// fabric_local_solve.cc), far above the solver's rounding and far below any physical difference.
inline constexpr double kRateTolerance = 1e-9;

class SharingIndex {
 public:
  // Both outlive the index; `links` for the capacities and the dirty marks of the links a change
  // touches.
  SharingIndex(FlowTable& flows, LinkTable& links);

  // The flows on link l as entries.
  [[nodiscard]] LinkFlowsView flows_on(topo::LinkId l) const;
  // Whether two or more flows cross l and it can bind them (a pair's or shared link).
  [[nodiscard]] bool binds(topo::LinkId l) const {
    const LinkOccupant& o = occupants_[l.index()];
    return o.slot == LinkOccupant::kListed && class_[o.usage] == ListClass::kBinding;
  }
  // The totals of a shared link (precondition: two or more flows cross it and it binds, unpaired).
  [[nodiscard]] const SharedTotals& totals_of(topo::LinkId l) const {
    MEGASIM_ASSERT(occupants_[l.index()].slot == LinkOccupant::kListed, "a link is not shared");
    return totals_[occupants_[l.index()].usage];
  }
  [[nodiscard]] const PairGroup& pair(std::size_t id) const { return pairs_[id]; }
  [[nodiscard]] std::size_t pair_ids() const { return pairs_.size(); }  // ids in use or free
  // Starts the load of a listed link's list (the caller reads it soon).
  void prefetch_list(topo::LinkId l) const {
    const auto* list = reinterpret_cast<const char*>(&lists_[occupants_[l.index()].usage]);
    __builtin_prefetch(list);
    __builtin_prefetch(list + sizeof(LinkFlowList) - 1);
  }

  // Enters the flow in `slot` (routed, usages set, clean) in its links' records and classifies its
  // usages and those of the flows it joins; marks its links dirty when mark_links_dirty.
  void enter(std::uint32_t slot, bool mark_links_dirty);
  // The reverse: the flow leaves its links (its usages left clean), its partners stay classified;
  // marks the binding links it leaves dirty when mark_links_dirty.
  void leave(std::uint32_t slot, bool mark_links_dirty);
  // The flow's new rate, into the entries and totals of its shared links (which hold the old one).
  void on_rate_change(const FlowState& f, double rate);
  // Around a capacity change of link l (LinkTable::set_*): its usages' caps, their flows' rate bounds
  // and the classes of the links those bounds decide.
  void before_capacity_change(topo::LinkId l);
  void after_capacity_change(topo::LinkId l);

  // Whether link l is a bottleneck of the flow in `slot`: saturated, and no flow on it faster. False
  // for a link the flow in `leaving` crosses (its capacity is about to be freed). A listed link's
  // fastest entry and load are kept from its last scan until an entry changes (ListScan), so the
  // flows of one link, checked in turn, scan it once.
  [[nodiscard]] bool is_bottleneck_of(topo::LinkId l, std::uint32_t slot, std::uint32_t leaving = kNoSlot) const;
  // Whether pair group `pair`'s links bind `slot` (one of its two flows).
  [[nodiscard]] bool is_pair_bottleneck_of(std::int32_t pair, std::uint32_t slot) const;
  // Whether the flow in `slot` has a bottleneck: it runs at the cap of a link it crosses alone, or
  // pair_binds(group id) holds for one of its pair groups, or link_binds(link) for one of its shared
  // links. The hint is tried first (a link hint only while the link is still shared: a paired link's
  // list holds its partner's old rate), and the constraint found becomes the next hint.
  template <typename PairBinds, typename LinkBinds>
  bool find_bottleneck(std::uint32_t slot, PairBinds pair_binds, LinkBinds link_binds);

  // The first broken invariant, or "" (fabric_sharing_check.cc).
  [[nodiscard]] std::string check() const;

 private:
  // The entry of a link's lone flow (precondition: the occupant names one).
  [[nodiscard]] LinkFlowEntry lone_entry(const LinkOccupant& o) const;
  void prefetch_link_records(std::span<const topo::LinkId> route_links) const;
  // Classifies usages as the flows on their link change (enter, leave): private while the link
  // cannot bind (one flow, or a slack list), else paired or shared.
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
  void recount_totals(std::uint32_t list);  // totals_[list] from the list's entries
  // Every change of a list's entries (membership, positions, rates) drops its kept scan.
  void drop_scan(std::uint32_t list) { scans_[list].valid = false; }
  void remove_shared(std::uint32_t slot, std::uint32_t usage);

  FlowTable& flows_;
  LinkTable& links_;
  std::vector<LinkOccupant> occupants_;  // by link: its lone flow, or its list
  std::vector<LinkFlowList> lists_;      // the lists of the links two or more flows share
  std::vector<SharedTotals> totals_;     // by list: valid while its link is shared
  std::vector<ListClass> class_;         // by list: whether its link binds its flows
  // By list: the fastest entry rate and the load (sum of weight x rate, in list order) its entries
  // read at their last scan, while `valid`. Exactly the scan's values (check() verifies).
  struct ListScan {
    double fastest = 0;
    double load = 0;
    bool valid = false;
  };
  mutable std::vector<ListScan> scans_;
  std::vector<std::uint32_t> free_lists_;  // unused lists, the last freed last
  std::vector<PairGroup> pairs_;           // pair groups by id, listed in their flows' `pairs`
  std::vector<std::uint32_t> free_pairs_;  // unused ids
};

inline LinkFlowsView SharingIndex::flows_on(topo::LinkId l) const {
  const LinkOccupant& o = occupants_[l.index()];
  if (o.slot == LinkOccupant::kListed) {
    const LinkFlowList& list = lists_[o.usage];
    return LinkFlowsView(std::span<const LinkFlowEntry>(list.data(), list.size()));
  }
  if (o.slot == kNoSlot) return {};
  return LinkFlowsView(lone_entry(o));
}

inline LinkFlowEntry SharingIndex::lone_entry(const LinkOccupant& o) const {
  const FlowState& f = flows_[o.slot];
  const double weight = f.usages[o.usage].weight;
  return {o.slot, o.usage, weight, f.rate, weight * f.rate_bound};
}

inline void SharingIndex::on_rate_change(const FlowState& f, double rate) {
  // The scans read rates in the lists of shared links; a pair's links are read through the pair
  // group and the flows, and get their rates when they turn shared.
  for (const SharedUsage& k : f.shared) {
    const std::uint32_t list = occupants_[k.link.index()].usage;
    LinkFlowEntry& e = lists_[list][f.usages[k.usage].position];
    SharedTotals& t = totals_[list];
    drop_scan(list);
    t.load += k.weight * (std::max(0.0, rate) - std::max(0.0, e.rate));
    t.fastest = std::max(t.fastest, rate);
    if ((e.rate <= 0) != (rate <= 0)) rate <= 0 ? ++t.unsolved : --t.unsolved;
    e.rate = rate;
  }
}

template <typename PairBinds, typename LinkBinds>
bool SharingIndex::find_bottleneck(std::uint32_t slot, PairBinds pair_binds, LinkBinds link_binds) {
  FlowState& g = flows_[slot];
  if (g.rate >= g.private_caps.min() * (1 - kRateTolerance)) return true;  // at its cap
  const BottleneckHint hint = g.bottleneck;
  if (hint.pair >= 0
          ? pairs_[static_cast<std::size_t>(hint.pair)].has(slot) && pair_binds(static_cast<std::uint32_t>(hint.pair))
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
