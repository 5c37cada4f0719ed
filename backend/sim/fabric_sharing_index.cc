// SharingIndex: entering and leaving links, capacity changes, and the bottleneck tests on the
// current rates (the classification itself is in fabric_sharing.cc).
#include <algorithm>
#include <limits>
#include <vector>

#include "backend/sim/fabric_sharing_index.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

double scan_fastest(const LinkFlowList& list) {
  double fastest = -std::numeric_limits<double>::infinity();
  for (const LinkFlowEntry& e : list) fastest = std::max(fastest, e.rate);
  return fastest;
}

double scan_load(const LinkFlowList& list) {
  double load = 0;
  for (const LinkFlowEntry& e : list) load += e.weight * e.rate;
  return load;
}

}  // namespace

SharingIndex::SharingIndex(FlowTable& flows, LinkTable& links)
    : flows_(flows), links_(links), occupants_(links.size()) {}

// Starts the loads of the records entering or leaving these links reads, so that they overlap:
// every link's occupant, then the lists of the links that have one and the records of lone flows
// (a flow's links are scattered over arrays larger than the cache).
void SharingIndex::prefetch_link_records(std::span<const topo::LinkId> route_links) const {
  for (const topo::LinkId l : route_links) __builtin_prefetch(&occupants_[l.index()]);
  for (const topo::LinkId l : route_links) {
    const LinkOccupant& occupant = occupants_[l.index()];
    if (occupant.slot == LinkOccupant::kListed) {
      const auto* list = reinterpret_cast<const char*>(&lists_[occupant.usage]);
      __builtin_prefetch(list);
      __builtin_prefetch(list + sizeof(LinkFlowList) - 1);
    } else if (occupant.slot != kNoSlot) {
      __builtin_prefetch(&flows_[occupant.slot]);
    }
  }
}

// Enters the flow in its links' flow lists and classifies its usages and those of the flows it
// joins: private, paired or shared (fabric_sharing.cc). A link it is first on just records it as
// the lone flow; a link's second flow moves the lone one into the link's list, which stays slack
// (its flows cross it as if alone) until their bounds can exceed its capacity. The private caps
// start as the caps of all its links (kept with a cached route) and lose those of the links that
// bind it.
void SharingIndex::enter(std::uint32_t slot, bool mark_links_dirty) {
  FlowState& f = flows_[slot];
  f.shared.clear();
  if (f.route != nullptr) {
    f.private_caps = f.route->caps;
  } else {
    f.private_caps.clear();
    for (const Usage& u : f.usages) f.private_caps.add(u.cap);
  }
  f.rate_bound = f.private_caps.min();
  MEGASIM_ASSERT(f.pairs.empty(), "a flow entering its links is already paired");
  const std::span<const topo::LinkId> route_links = links_of(f);
  prefetch_link_records(route_links);
  const std::size_t n = route_links.size();
  for (std::size_t i = 0; i < n; ++i) {
    const topo::LinkId l = route_links[i];
    if (mark_links_dirty) links_.mark_dirty(l);
    LinkOccupant& occupant = occupants_[l.index()];
    if (occupant.slot == kNoSlot) {  // alone: its usage stays clean
      occupant = {slot, static_cast<std::uint32_t>(i)};
      continue;
    }
    Usage& u = f.usages[i];
    if (occupant.slot != LinkOccupant::kListed) {  // the lone flow moves into a list
      const LinkFlowEntry entry = lone_entry(occupant);
      if (free_lists_.empty()) {
        free_lists_.push_back(static_cast<std::uint32_t>(lists_.size()));
        lists_.emplace_back();
        totals_.emplace_back();
        class_.emplace_back();
        scans_.emplace_back();
      }
      occupant = {LinkOccupant::kListed, free_lists_.back()};
      free_lists_.pop_back();
      lists_[occupant.usage].push_back(entry);
      class_[occupant.usage] = ListClass::kSlack;
    }
    const std::uint32_t index = occupant.usage;
    LinkFlowList& list = lists_[index];
    drop_scan(index);
    u.position = static_cast<std::uint32_t>(list.size());
    list.push_back({slot, static_cast<std::uint32_t>(i), u.weight, f.rate, u.weight * f.rate_bound});
    if (class_[index] == ListClass::kBinding) {
      f.private_caps.remove(u.cap);
      on_link_joined(slot, static_cast<std::uint32_t>(i));
    } else if (list_can_bind({list.data(), list.size()}, links_.capacity(u.link))) {
      classify_binding(index);
    }
  }
}

// Leaves the flow's links; a link left with one flow records it as its lone flow again.
void SharingIndex::leave(std::uint32_t slot, bool mark_links_dirty) {
  FlowState& f = flows_[slot];
  const std::span<const topo::LinkId> route_links = links_of(f);
  prefetch_link_records(route_links);
  for (std::size_t i = 0; i < route_links.size(); ++i) {
    LinkOccupant& occupant = occupants_[route_links[i].index()];
    if (occupant.slot != LinkOccupant::kListed) {  // it was alone: the link is empty now
      occupant.slot = kNoSlot;
      continue;
    }
    Usage& u = f.usages[i];
    const std::uint32_t index = occupant.usage;
    LinkFlowList& list = lists_[index];
    drop_scan(index);
    if (u.pair >= 0) {  // its partner stays alone on the link
      const LinkFlowEntry& partner = list[u.position == 0 ? 1 : 0];
      unpair_link(list[u.position], partner);
      flows_[partner.slot].private_caps.add(flows_[partner.slot].usages[partner.usage].cap);
    }
    list[u.position] = list.back();
    list.pop_back();
    if (u.position < list.size()) {
      const LinkFlowEntry moved = list[u.position];
      flows_[moved.slot].usages[moved.usage].position = u.position;
    }
    // A slack link constrains none of its flows, before or after: only a binding one changed.
    if (mark_links_dirty && class_[index] == ListClass::kBinding) links_.mark_dirty(u.link);
    if (class_[index] == ListClass::kBinding) on_link_left(index, u.link);
    if (list.size() == 1) {  // its last flow is alone again: the list goes back to the pool
      free_lists_.push_back(index);
      occupant = {list.front().slot, list.front().usage};
      flows_[occupant.slot].usages[occupant.usage].position = 0;
      list.clear();
    }
    u.position = 0;  // left clean (unpair_link reset its pair)
    u.shared_index = -1;
  }
  MEGASIM_ASSERT(f.pairs.empty(), "a flow left its links but not its pair groups");
  f.shared.clear();
  f.private_caps.clear();
}

// Around a capacity change of link l: every usage's cap on it moves with the capacity, and with it
// the rate bounds of its flows and so whether their other links can bind them (the caller drops the
// cached routes, which carry caps, in between). Before the change the link is made private to each
// of its flows (slack), and after it its class is decided afresh.
void SharingIndex::before_capacity_change(topo::LinkId l) {
  const LinkOccupant& occupant = occupants_[l.index()];
  if (occupant.slot == LinkOccupant::kListed && class_[occupant.usage] == ListClass::kBinding)
    classify_slack(occupant.usage);
  for (const LinkFlowEntry& e : flows_on(l)) flows_[e.slot].private_caps.remove(flows_[e.slot].usages[e.usage].cap);
}

void SharingIndex::after_capacity_change(topo::LinkId l) {
  std::vector<std::uint32_t> slots;
  for (const LinkFlowEntry& e : flows_on(l)) {
    Usage& u = flows_[e.slot].usages[e.usage];
    u.cap = usage_cap(links_, u);
    slots.push_back(e.slot);
  }
  for (const std::uint32_t slot : slots) refresh_rate_bound(slot, l);
  for (const LinkFlowEntry& e : flows_on(l)) flows_[e.slot].private_caps.add(flows_[e.slot].usages[e.usage].cap);
  const LinkOccupant& occupant = occupants_[l.index()];
  if (occupant.slot == LinkOccupant::kListed) {
    const LinkFlowList& list = lists_[occupant.usage];
    if (list_can_bind({list.data(), list.size()}, links_.capacity(l))) classify_binding(occupant.usage);
  }
}

void SharingIndex::refresh_rate_bound(std::uint32_t slot, topo::LinkId skip) {
  FlowState& f = flows_[slot];
  double bound = std::numeric_limits<double>::infinity();
  for (const Usage& u : f.usages) bound = std::min(bound, u.cap);
  if (bound == f.rate_bound) return;
  f.rate_bound = bound;
  for (const Usage& u : f.usages) {
    const LinkOccupant& occupant = occupants_[u.link.index()];
    if (occupant.slot != LinkOccupant::kListed) continue;
    LinkFlowList& list = lists_[occupant.usage];
    list[u.position].bound_load = u.weight * bound;
    if (u.link == skip) continue;
    const bool binds = list_can_bind({list.data(), list.size()}, links_.capacity(u.link));
    if (binds != (class_[occupant.usage] == ListClass::kBinding)) {
      binds ? classify_binding(occupant.usage) : classify_slack(occupant.usage);
    }
  }
}

// Whether link l is a bottleneck of the flow in `slot`: saturated, and no flow on it faster. False
// for a link the flow in `leaving` crosses (its capacity is about to be freed).
bool SharingIndex::is_bottleneck_of(topo::LinkId l, std::uint32_t slot, std::uint32_t leaving) const {
  const double limit = flows_[slot].rate * (1 + kRateTolerance);
  const LinkOccupant& o = occupants_[l.index()];
  if (o.slot != LinkOccupant::kListed) {
    double load = 0;
    for (const LinkFlowEntry& e : flows_on(l)) {
      if (e.rate > limit || e.slot == leaving) return false;
      load += e.weight * e.rate;
    }
    return load >= links_.capacity(l) * (1 - kRateTolerance);
  }
  ListScan& scan = scans_[o.usage];
  if (!scan.valid) scan = {scan_fastest(lists_[o.usage]), scan_load(lists_[o.usage]), true};
  if (leaving != kNoSlot) {
    for (const Usage& u : flows_[leaving].usages) {
      if (u.link == l) return false;
    }
  }
  return scan.fastest <= limit && scan.load >= links_.capacity(l) * (1 - kRateTolerance);
}

// The pair group's links bind `slot` (one of its two flows): they are saturated, r_a + r_b at the
// smallest cap, and neither flow is faster. False for a group that ended or is another pair's now.
bool SharingIndex::is_pair_bottleneck_of(std::int32_t pair, std::uint32_t slot) const {
  const PairGroup& g = pairs_[static_cast<std::size_t>(pair)];
  if (!g.has(slot)) return false;
  const double limit = flows_[slot].rate * (1 + kRateTolerance);
  const double ra = flows_[g.a].rate;
  const double rb = flows_[g.b].rate;
  if (ra > limit || rb > limit) return false;
  return ra + rb >= g.caps.min() * (1 - kRateTolerance);
}

}  // namespace megasim::backend
