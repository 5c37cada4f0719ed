// The sharing bookkeeping recounted from the link lists (tests, through Fabric::check_rates): each
// usage's class (private: alone or on a link that cannot bind; paired; shared), the flows' rate
// bounds, the shared lists, the private caps, the pair groups and
// which flows use their route's usage array in place.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "backend/sim/fabric_impl.h"

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

// Recounts every active flow's shared list, pair groups and private caps from the link lists (tests,
// through Fabric::check_rates).
std::string Fabric::Impl::check_sharing() const {
  for (const std::string& broken : {links.check(), flows.check(), route_cache.check()}) {
    if (!broken.empty()) return broken;
  }
  std::unordered_map<std::int32_t, PrivateCaps> expected_pair_caps;
  std::unordered_map<const CachedRoute*, std::uint32_t> borrowers;
  for (std::uint32_t slot = 0; slot < flows.slots(); ++slot) {
    const FlowState& f = flows[slot];
    if (!f.active) continue;
    // Its usages are its own array, or the array of its route, which no other flow uses in place.
    if (borrows_route_usages(f)) {
      if (!f.route->usages_lent || f.usages.size() != f.route->usages.size() || ++borrowers[f.route] > 1)
        return fmt::format("flow {}: borrows usages that are not its route's alone", f.id.value);
    } else if (f.usages.data() != f.own_usages.data() || f.usages.size() != f.own_usages.size()) {
      return fmt::format("flow {}: usages are neither its own nor borrowed", f.id.value);
    }
    const std::span<const topo::LinkId> route_links = links_of(f);
    if (route_links.size() != f.usages.size()) return fmt::format("flow {}: link ids out of step", f.id.value);
    PrivateCaps expected;
    std::size_t shared = 0;
    std::vector<std::uint32_t> pairs;
    double bound = std::numeric_limits<double>::infinity();
    for (const Usage& u : f.usages) bound = std::min(bound, u.cap);
    if (f.rate_bound != bound) return fmt::format("flow {}: stale rate bound", f.id.value);
    for (std::size_t i = 0; i < f.usages.size(); ++i) {
      const Usage& u = f.usages[i];
      if (route_links[i] != u.link) return fmt::format("flow {}: link ids out of step", f.id.value);
      const LinkFlowsView list = flows_on(u.link);
      if (u.cap != usage_cap(u)) return fmt::format("flow {}: stale cap on link {}", f.id.value, u.link.value);
      const bool on_list = list.size() > 1;
      const bool binds = on_list && list_can_bind({list.begin(), list.size()}, links.capacity(u.link));
      if (on_list && binds != (list_class[occupants[u.link.index()].usage] == ListClass::kBinding))
        return fmt::format("link {}: stale binding class", u.link.value);
      const bool alone = !binds;  // crossed as if alone: one flow, or flows that cannot fill it
      const bool paired =
          binds && list.size() == 2 &&
          flows[list[0].slot].usages[list[0].usage].weight == flows[list[1].slot].usages[list[1].usage].weight;
      if (alone != (u.shared_index < 0 && u.pair < 0) || paired != (u.pair >= 0) ||
          (u.shared_index >= 0) != (!alone && !paired)) {
        return fmt::format("flow {}: link {} misclassified (crossed by {} flows)", f.id.value, u.link.value,
                           list.size());
      }
      const LinkFlowEntry& entry = on_list ? list[u.position] : list.front();
      if (entry.slot != slot || entry.usage != i || entry.weight != u.weight ||
          entry.bound_load != u.weight * f.rate_bound ||
          (on_list && occupants[u.link.index()].slot != LinkOccupant::kListed))
        return fmt::format("flow {}: link {} lists it out of place", f.id.value, u.link.value);
      if (alone) {
        if (list.size() == 1 && u.position != 0)
          return fmt::format("flow {}: usage of link {} not clean", f.id.value, u.link.value);
        expected.add(usage_cap(u));
      } else if (paired) {
        const PairGroup& g = pair_groups.at(static_cast<std::size_t>(u.pair));
        const std::uint32_t other = list[0].slot == slot ? list[1].slot : list[0].slot;
        if (!g.active || std::min(slot, other) != g.a || std::max(slot, other) != g.b)
          return fmt::format("flow {}: link {} in the wrong pair group", f.id.value, u.link.value);
        if (slot == g.a) expected_pair_caps[u.pair].add(usage_cap(u));
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
    for (const std::uint32_t id : f.pairs) partners.push_back(pair_groups[id].partner(slot));
    std::ranges::sort(partners);
    if (std::ranges::adjacent_find(partners) != partners.end())
      return fmt::format("flow {}: two pair groups with one partner", f.id.value);
  }
  for (std::size_t l = 0; l < occupants.size(); ++l) {  // the totals of the shared links
    if (occupants[l].slot != LinkOccupant::kListed) continue;
    const LinkFlowList& list = flow_lists[occupants[l].usage];
    if (flows[list.front().slot].usages[list.front().usage].shared_index < 0) continue;  // paired
    const SharedTotals& kept = shared_totals[occupants[l].usage];
    double load = 0, fastest = 0;
    std::uint32_t unsolved = 0;
    for (const LinkFlowEntry& e : list) {
      load += e.weight * std::max(0.0, e.rate);
      fastest = std::max(fastest, e.rate);
      if (e.rate <= 0) ++unsolved;
    }
    if (kept.flows != list.size() || kept.unsolved != unsolved || kept.fastest < fastest ||
        std::abs(kept.load - load) >
            1e-12 * std::max(load, links.state(topo::LinkId(static_cast<std::int32_t>(l))).nominal_bytes_per_s))
      return fmt::format("link {}: totals out of step (load {} kept {})", l, load, kept.load);
  }
  for (std::size_t id = 0; id < pair_groups.size(); ++id) {
    if (!pair_groups[id].active) continue;
    const auto it = expected_pair_caps.find(static_cast<std::int32_t>(id));
    if (it == expected_pair_caps.end() || !same_caps(it->second, pair_groups[id].caps))
      return fmt::format("pair group {}: caps out of step", id);
  }
  for (const std::unique_ptr<CachedRoute>& r : route_cache.routes()) {  // a lent array has its active borrower
    if (r->usages_lent != borrowers.contains(r.get())) return "a cached route's usages are lent to no flow";
  }
  return "";
}

}  // namespace megasim::backend
