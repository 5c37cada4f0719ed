// Fabric::Impl::check_state(): every part's own invariant (LinkTable, FlowTable, RouteCache,
// SharingIndex, RegionSolver, the removal shortcut's SlotStamps), and the one relation between parts that none of them
// owns: each active flow's usages are its own array, or the array of its cached route, which no other flow uses in
// place (and a route's array is lent exactly while such a flow uses it), with its link ids in step.
#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "backend/sim/fabric_impl.h"

namespace megasim::backend {

std::string Fabric::Impl::check_state() const {
  for (const std::string& broken :
       {links.check(), flows.check(), route_cache.check(), sharing.check(), solver.check(), removal_seen.check()}) {
    if (!broken.empty()) return broken;
  }
  std::unordered_map<const CachedRoute*, std::uint32_t> borrowers;
  for (const FlowState& f : flows.all()) {
    if (!f.active) continue;
    if (borrows_route_usages(f)) {
      if (!f.route->usages_lent || f.usages.size() != f.route->usages.size() || ++borrowers[f.route] > 1)
        return fmt::format("flow {}: borrows usages that are not its route's alone", f.id.value);
    } else if (f.usages.data() != f.own_usages.data() || f.usages.size() != f.own_usages.size()) {
      return fmt::format("flow {}: usages are neither its own nor borrowed", f.id.value);
    }
    const std::span<const topo::LinkId> route_links = links_of(f);
    if (route_links.size() != f.usages.size()) return fmt::format("flow {}: link ids out of step", f.id.value);
    for (std::size_t i = 0; i < route_links.size(); ++i) {
      if (route_links[i] != f.usages[i].link) return fmt::format("flow {}: link ids out of step", f.id.value);
    }
  }
  for (const std::unique_ptr<CachedRoute>& r : route_cache.routes()) {  // a lent array has its active borrower
    if (r->usages_lent != borrowers.contains(r.get())) return "a cached route's usages are lent to no flow";
  }
  return "";
}

}  // namespace megasim::backend
