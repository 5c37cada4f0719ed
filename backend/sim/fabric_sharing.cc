// Which of a flow's links it shares. A link crossed by one flow only (most links of a long ring
// flow: its NIC cables and ToR ports that no other transfer uses at the moment) just caps that
// flow's rate; it takes no part in how flows share bandwidth. Nor does a link whose flows cannot
// fill it: each flow runs at most at its rate bound (the smallest cap among its links), and if the
// flows' loads at their bounds sum to no more than the capacity, the link's constraint is redundant
// and leaves the max-min fair allocation as it is (two transfers, each held to its 200 Gb/s NIC, on
// a 400 Gb/s switch port: most of the switch links two transfers meet on). Such a "slack" link is
// kept as a list of its flows, each of which treats it as a link it crosses alone. A link crossed
// by exactly two flows with the same weight that can fill it (the two NCCL channels of a ring share
// every NIC cable of the ring) only bounds the sum of their rates, so all such links of a pair act
// as one link of a PairGroup. Each flow keeps the list of its usages on the other binding links,
// its pair groups, and the multiset of the caps (capacity / weight) of its private links, so the
// region solve (fabric_local_solve.cc) works on binding shared links, one link per pair and one cap
// per flow, at a cost that follows the contention rather than the flows' length. Kept exact as
// flows enter and leave links (a link turns binding when its flows' bounds first exceed its
// capacity, slack again when they no longer do) and as capacities, and with them the bounds, change.
#include <algorithm>
#include <limits>
#include <span>

#include "backend/sim/fabric_sharing_index.h"
#include "sim/error.h"

namespace megasim::backend {

void PrivateCaps::add(double cap) {
  smallest_ = std::min(smallest_, cap);
  for (Entry& e : entries) {
    if (e.cap == cap) {
      ++e.count;
      return;
    }
  }
  entries.push_back({cap, 1});
}

void PrivateCaps::remove(double cap) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].cap != cap) continue;
    if (--entries[i].count == 0) {
      entries[i] = entries.back();
      entries.pop_back();
      if (cap == smallest_) {
        smallest_ = std::numeric_limits<double>::infinity();
        for (const Entry& e : entries) smallest_ = std::min(smallest_, e.cap);
      }
    }
    return;
  }
  MEGASIM_ASSERT(false, "removing a private link cap the flow does not have");
}

void PrivateCaps::clear() {
  entries.clear();
  smallest_ = std::numeric_limits<double>::infinity();
}

void SharingIndex::add_shared(std::uint32_t slot, std::uint32_t usage) {
  FlowState& f = flows_[slot];
  Usage& u = f.usages[usage];
  u.shared_index = static_cast<std::int32_t>(f.shared.size());
  f.shared.push_back({usage, u.link, u.weight});
}

void SharingIndex::recount_totals(std::uint32_t list) {
  SharedTotals t;
  for (const LinkFlowEntry& e : lists_[list]) {
    t.load += e.weight * std::max(0.0, e.rate);
    t.fastest = std::max(t.fastest, e.rate);
    if (e.rate <= 0) ++t.unsolved;
  }
  t.flows = static_cast<std::uint32_t>(lists_[list].size());
  totals_[list] = t;
}

void SharingIndex::remove_shared(std::uint32_t slot, std::uint32_t usage) {
  FlowState& f = flows_[slot];
  Usage& u = f.usages[usage];
  const auto index = static_cast<std::size_t>(u.shared_index);
  f.shared[index] = f.shared.back();
  f.shared.pop_back();
  if (index < f.shared.size()) f.usages[f.shared[index].usage].shared_index = static_cast<std::int32_t>(index);
  u.shared_index = -1;
}

void SharingIndex::mark_shared(std::uint32_t slot, std::uint32_t usage) {
  flows_[slot].private_caps.remove(flows_[slot].usages[usage].cap);
  add_shared(slot, usage);
}

void SharingIndex::mark_private(std::uint32_t slot, std::uint32_t usage) {
  remove_shared(slot, usage);
  flows_[slot].private_caps.add(flows_[slot].usages[usage].cap);
}

// Puts the link of entries x and y (its only two flows, equal weights) in their pair group,
// creating the group at the pair's first link.
void SharingIndex::pair_link(const LinkFlowEntry& x, const LinkFlowEntry& y) {
  const std::uint32_t a = std::min(x.slot, y.slot);
  const std::uint32_t b = std::max(x.slot, y.slot);
  // The pair's group, if it has one, is in both flows' lists: search the shorter.
  const bool a_shorter = flows_[a].pairs.size() <= flows_[b].pairs.size();
  const auto& candidates = a_shorter ? flows_[a].pairs : flows_[b].pairs;
  const std::uint32_t other = a_shorter ? b : a;
  const auto found = std::ranges::find_if(
      candidates, [&](std::uint32_t id) { return pairs_[id].partner(a_shorter ? a : b) == other; });
  std::uint32_t id = 0;
  if (found != candidates.end()) {
    id = *found;
  } else {
    if (free_pairs_.empty()) {
      pairs_.emplace_back();
      id = static_cast<std::uint32_t>(pairs_.size() - 1);
    } else {
      id = free_pairs_.back();
      free_pairs_.pop_back();
    }
    PairGroup& g = pairs_[id];
    g.a = a;
    g.b = b;
    g.active = true;
    flows_[a].pairs.push_back(id);
    flows_[b].pairs.push_back(id);
  }
  Usage& ux = flows_[x.slot].usages[x.usage];
  Usage& uy = flows_[y.slot].usages[y.usage];
  pairs_[id].caps.add(ux.cap);
  ux.pair = uy.pair = static_cast<std::int32_t>(id);
}

// Takes the link of entries x and y out of their pair group; the group ends with its last link.
void SharingIndex::unpair_link(const LinkFlowEntry& x, const LinkFlowEntry& y) {
  Usage& ux = flows_[x.slot].usages[x.usage];
  Usage& uy = flows_[y.slot].usages[y.usage];
  const auto id = static_cast<std::uint32_t>(ux.pair);
  MEGASIM_ASSERT(ux.pair >= 0 && uy.pair == ux.pair, "unpairing a link that is not a pair's");
  ux.pair = uy.pair = -1;
  PairGroup& g = pairs_[id];
  g.caps.remove(ux.cap);
  if (!g.caps.empty()) return;
  for (const std::uint32_t slot : {g.a, g.b}) {
    auto& pairs = flows_[slot].pairs;
    const auto at = std::find(pairs.begin(), pairs.end(), id);
    MEGASIM_ASSERT(at != pairs.end(), "a flow lost track of its pair group");
    *at = pairs.back();
    pairs.pop_back();
  }
  g.active = false;
  free_pairs_.push_back(id);
}

// The usage's flow was just appended to the list of a link that binds its flows (two or more were
// there): classify it, and the flows already there.
void SharingIndex::on_link_joined(std::uint32_t slot, std::uint32_t usage) {
  const std::uint32_t index = occupants_[flows_[slot].usages[usage].link.index()].usage;
  LinkFlowList& list = lists_[index];
  drop_scan(index);
  if (list.size() == 3 && is_pair_list(std::span(list.data(), 2))) {  // its two flows were a pair
    unpair_link(list[0], list[1]);
    for (LinkFlowEntry& e : std::span(list.data(), 2)) {  // shared now: their rates are read from the list
      e.rate = flows_[e.slot].rate;
      add_shared(e.slot, e.usage);
    }
  }
  add_shared(slot, usage);
  recount_totals(index);
}

// A flow just left the list of binding link l: the flows left there are reclassified (uninstall_usages
// records a last one as the link's lone flow afterwards). A flow paired on l is unpaired by the
// caller before it leaves.
void SharingIndex::on_link_left(std::uint32_t index, topo::LinkId l) {
  LinkFlowList& list = lists_[index];
  if (list.size() == 1) {
    const Usage& u = flows_[list.front().slot].usages[list.front().usage];
    if (u.shared_index >= 0) mark_private(list.front().slot, list.front().usage);
    return;  // the list goes back to the pool; its class is set when it is taken again
  }
  if (!list_can_bind({list.data(), list.size()}, links_.capacity(l))) {
    classify_slack(index);
    return;
  }
  if (!is_pair_list(list)) {
    recount_totals(index);
    return;
  }
  const LinkFlowEntry& x = list[0];
  const LinkFlowEntry& y = list[1];
  remove_shared(x.slot, x.usage);
  remove_shared(y.slot, y.usage);
  pair_link(x, y);
}

// The flows of a listed link that was slack: their loads at their fastest can exceed its capacity
// now, so it constrains them, as a pair group (two flows, equal weights) or a shared link.
void SharingIndex::classify_binding(std::uint32_t index) {
  LinkFlowList& list = lists_[index];
  class_[index] = ListClass::kBinding;
  for (const LinkFlowEntry& e : list) flows_[e.slot].private_caps.remove(flows_[e.slot].usages[e.usage].cap);
  if (is_pair_list(list)) {
    pair_link(list[0], list[1]);
    return;
  }
  drop_scan(index);
  for (LinkFlowEntry& e : list) {  // their rates are read from the list while it binds
    e.rate = flows_[e.slot].rate;
    add_shared(e.slot, e.usage);
  }
  recount_totals(index);
}

// The reverse: the link cannot bind its flows any more, and each crosses it as if alone.
void SharingIndex::classify_slack(std::uint32_t index) {
  const LinkFlowList& list = lists_[index];
  class_[index] = ListClass::kSlack;
  if (flows_[list[0].slot].usages[list[0].usage].pair >= 0) {
    unpair_link(list[0], list[1]);
  } else {
    for (const LinkFlowEntry& e : list) remove_shared(e.slot, e.usage);
  }
  for (const LinkFlowEntry& e : list) flows_[e.slot].private_caps.add(flows_[e.slot].usages[e.usage].cap);
}

}  // namespace megasim::backend
