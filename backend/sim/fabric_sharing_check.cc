// SharingIndex::check(): the sharing bookkeeping recounted from the link lists (tests, through
// Fabric::check_rates): each usage's class (private: alone or on a link that cannot bind; paired;
// shared) and list position, the flows' rate bounds, the shared lists, the private caps, the pair
// groups and the totals of the shared links.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "backend/sim/fabric_sharing_index.h"

namespace megasim::backend {

namespace {

// Whether two cap multisets hold the same values with the same counts (and the same kept minimum).
bool same_caps(const PrivateCaps& x, const PrivateCaps& y) {
  if (x.entries.size() != y.entries.size() || x.min() != y.min()) return false;
  return std::ranges::all_of(x.entries, [&](const PrivateCaps::Entry& e) {
    const auto it = std::ranges::find_if(y.entries, [&](const PrivateCaps::Entry& g) { return g.cap == e.cap; });
    return it != y.entries.end() && it->count == e.count;
  });
}

}  // namespace

// Recounts every active flow's classification, shared list, pair groups and private caps, and the
// shared links' totals, from the link lists.
std::string SharingIndex::check() const {
  std::unordered_map<std::int32_t, PrivateCaps> expected_pair_caps;
  for (std::uint32_t slot = 0; slot < flows_.slots(); ++slot) {
    const FlowState& f = flows_[slot];
    if (!f.active) continue;
    PrivateCaps expected;
    std::size_t shared = 0;
    std::vector<std::uint32_t> pairs;
    double bound = std::numeric_limits<double>::infinity();
    for (const Usage& u : f.usages) bound = std::min(bound, u.cap);
    if (f.rate_bound != bound) return fmt::format("flow {}: stale rate bound", f.id.value);
    for (std::size_t i = 0; i < f.usages.size(); ++i) {
      const Usage& u = f.usages[i];
      const LinkFlowsView list = flows_on(u.link);
      if (u.cap != usage_cap(links_, u)) return fmt::format("flow {}: stale cap on link {}", f.id.value, u.link.value);
      const bool on_list = list.size() > 1;
      const bool binds = on_list && list_can_bind({list.begin(), list.size()}, links_.capacity(u.link));
      if (on_list && binds != (class_[occupants_[u.link.index()].usage] == ListClass::kBinding))
        return fmt::format("link {}: stale binding class", u.link.value);
      const bool alone = !binds;  // crossed as if alone: one flow, or flows that cannot fill it
      const bool paired =
          binds && list.size() == 2 &&
          flows_[list[0].slot].usages[list[0].usage].weight == flows_[list[1].slot].usages[list[1].usage].weight;
      if (alone != (u.shared_index < 0 && u.pair < 0) || paired != (u.pair >= 0) ||
          (u.shared_index >= 0) != (!alone && !paired)) {
        return fmt::format("flow {}: link {} misclassified (crossed by {} flows_)", f.id.value, u.link.value,
                           list.size());
      }
      const LinkFlowEntry& entry = on_list ? list[u.position] : list.front();
      if (entry.slot != slot || entry.usage != i || entry.weight != u.weight ||
          entry.bound_load != u.weight * f.rate_bound ||
          (on_list && occupants_[u.link.index()].slot != LinkOccupant::kListed))
        return fmt::format("flow {}: link {} lists it out of place", f.id.value, u.link.value);
      if (alone) {
        if (list.size() == 1 && u.position != 0)
          return fmt::format("flow {}: usage of link {} not clean", f.id.value, u.link.value);
        expected.add(usage_cap(links_, u));
      } else if (paired) {
        const PairGroup& g = pairs_.at(static_cast<std::size_t>(u.pair));
        const std::uint32_t other = list[0].slot == slot ? list[1].slot : list[0].slot;
        if (!g.active || std::min(slot, other) != g.a || std::max(slot, other) != g.b)
          return fmt::format("flow {}: link {} in the wrong pair group", f.id.value, u.link.value);
        if (slot == g.a) expected_pair_caps[u.pair].add(usage_cap(links_, u));
        if (std::ranges::find(pairs, static_cast<std::uint32_t>(u.pair)) == pairs.end())
          pairs.push_back(static_cast<std::uint32_t>(u.pair));
      } else {
        ++shared;
        if (entry.rate != f.rate)
          return fmt::format("flow {}: stale rate in the list of link {}", f.id.value, u.link.value);
        const SharedUsage& listed = f.shared.at(static_cast<std::size_t>(u.shared_index));
        if (listed.usage != i || listed.link != u.link || listed.weight != u.weight)
          return fmt::format("flow {}: shared list out of step", f.id.value);
      }
    }
    if (shared != f.shared.size()) return fmt::format("flow {}: shared list has stale entries", f.id.value);
    if (!same_caps(expected, f.private_caps)) return fmt::format("flow {}: private caps out of step", f.id.value);
    std::vector<std::uint32_t> listed(f.pairs.begin(), f.pairs.end());
    std::ranges::sort(listed);
    std::ranges::sort(pairs);
    if (listed != pairs) return fmt::format("flow {}: pair group list out of step", f.id.value);
    std::vector<std::uint32_t> partners;
    for (const std::uint32_t id : f.pairs) partners.push_back(pairs_[id].partner(slot));
    std::ranges::sort(partners);
    if (std::ranges::adjacent_find(partners) != partners.end())
      return fmt::format("flow {}: two pair groups with one partner", f.id.value);
  }
  for (std::size_t l = 0; l < occupants_.size(); ++l) {  // the totals of the shared links
    if (occupants_[l].slot != LinkOccupant::kListed) continue;
    const LinkFlowList& list = lists_[occupants_[l].usage];
    if (flows_[list.front().slot].usages[list.front().usage].shared_index < 0) continue;  // paired
    const SharedTotals& kept = totals_[occupants_[l].usage];
    double load = 0, fastest = 0;
    std::uint32_t unsolved = 0;
    for (const LinkFlowEntry& e : list) {
      load += e.weight * std::max(0.0, e.rate);
      fastest = std::max(fastest, e.rate);
      if (e.rate <= 0) ++unsolved;
    }
    if (kept.flows != list.size() || kept.unsolved != unsolved || kept.fastest < fastest ||
        std::abs(kept.load - load) >
            1e-12 * std::max(load, links_.state(topo::LinkId(static_cast<std::int32_t>(l))).nominal_bytes_per_s))
      return fmt::format("link {}: totals out of step (load {} kept {})", l, load, kept.load);
  }
  for (std::size_t l = 0; l < occupants_.size(); ++l) {  // the kept scans: what scanning gives now
    if (occupants_[l].slot != LinkOccupant::kListed || !scans_[occupants_[l].usage].valid) continue;
    const LinkFlowList& list = lists_[occupants_[l].usage];
    double load = 0, fastest = -std::numeric_limits<double>::infinity();
    for (const LinkFlowEntry& e : list) {
      load += e.weight * e.rate;
      fastest = std::max(fastest, e.rate);
    }
    const ListScan& kept = scans_[occupants_[l].usage];
    if (kept.load != load || kept.fastest != fastest) return fmt::format("link {}: kept scan out of step", l);
  }
  for (std::size_t id = 0; id < pairs_.size(); ++id) {
    if (!pairs_[id].active) continue;
    const auto it = expected_pair_caps.find(static_cast<std::int32_t>(id));
    if (it == expected_pair_caps.end() || !same_caps(it->second, pairs_[id].caps))
      return fmt::format("pair group {}: caps out of step", id);
  }
  return "";
}

}  // namespace megasim::backend
