// A flow's route as the Fabric keeps it: taken from the route cache (fabric_route_cache.h) and used
// in place while the flow is its only user, or routed (fabric_routing.cc) and stored there; owned by
// the flow once the cache is cleared (a link's membership or capacity changed) or it is re-routed.
#include "backend/sim/fabric_impl.h"
#include "sim/error.h"

namespace megasim::backend {

void Fabric::Impl::own_route(FlowState& f) {
  if (f.route == nullptr) return;
  if (borrows_route_usages(f)) {
    f.own_usages.assign(f.usages.begin(), f.usages.end());
    f.usages = f.own_usages;
    f.route->usages_lent = false;
  }
  f.lanes = f.route->routes;
  f.segments = f.route->segments;
  f.own_links = f.route->links;
  f.route = nullptr;
}

void Fabric::Impl::clear_route_cache() {
  for (FlowState& f : flows.all()) {
    if (f.active) {
      own_route(f);
    } else {
      f.route = nullptr;
    }
  }
  route_cache.clear(links);
}

void Fabric::Impl::release_usages(FlowState& f) {
  if (borrows_route_usages(f)) f.route->usages_lent = false;
  f.own_usages.clear();
  f.own_links.clear();
  f.usages = {};
}

void Fabric::Impl::route_flow(FlowState& f, const std::vector<FlowLane>& lanes, RouteHint* hint) {
  f.lanes.clear();
  f.segments.clear();
  f.latency = -1;
  f.route = nullptr;
  const bool cacheable = params.routing != Routing::kAdaptive;  // adaptive paths depend on the load
  if (cacheable) {
    if (CachedRoute* cached = route_cache.find(lanes, hint); cached != nullptr) {
      CachedRoute& r = *cached;
      if (r.usages_lent) {  // another flow of the route holds its array: copy it, clean
        f.own_usages = r.usages;
        for (Usage& u : f.own_usages) {
          u.position = 0;
          u.shared_index = u.pair = -1;
        }
        f.usages = f.own_usages;
      } else {
        r.usages_lent = true;
        f.usages = r.usages;
      }
      f.latency = r.latency;
      f.route = cached;
      return;
    }
  }
  for (const FlowLane& lane : lanes) {
    LaneRoute r{lane, static_cast<std::uint32_t>(f.segments.size()), 0, false};
    const LaneResult result = route_lane(lane, f.segments);
    r.segments = static_cast<std::uint32_t>(f.segments.size()) - r.first_segment;
    r.fluid = result.fluid;
    f.stuck = f.stuck || result.stuck;
    f.lanes.push_back(r);
  }
  build_usages(f);
  if (cacheable && !f.stuck) {
    f.latency = path_latency(f);
    // A route already cached under this key (other lanes) stays in the store for the flows using it.
    PrivateCaps caps;
    for (const Usage& u : f.usages) caps.add(u.cap);
    f.route = route_cache.add(CachedRoute{lanes, lanes.front(), std::move(f.lanes), std::move(f.segments), f.own_usages,
                                          f.own_links, false, std::move(caps), f.latency},
                              hint);
    f.lanes.clear();
    f.segments.clear();
  }
}

}  // namespace megasim::backend
