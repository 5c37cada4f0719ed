// The route cache: ECMP and spray routes by a flow's first lane (a communicator's transfers reuse
// their connections, and so their paths, all iteration). Flows routed from it read its lanes and
// segments in place and credit the bytes they carry to it; clearing it (a link's membership or
// capacity changed) credits those bytes to the links and gives the flows their own copies.
#include <memory>

#include "backend/sim/fabric_impl.h"

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
  for (const std::unique_ptr<CachedRoute>& r : route_store) {
    for (const Usage& u : r->usages) links.credit(u.link, u.weight * r->pending_lane_bytes);
  }
  for (FlowState& f : flows) {
    if (f.active) {
      own_route(f);
    } else {
      f.route = nullptr;
    }
  }
  route_cache.clear();
  route_store.clear();
  ++route_generation;
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
  const LaneKey key{lanes.front().src.value, lanes.front().dst.value, lanes.front().connection};
  if (cacheable) {
    CachedRoute* cached = nullptr;
    if (hint != nullptr && hint->route != nullptr && hint->generation == route_generation) {
      cached = hint->route;
      MEGASIM_ASSERT(cached->lanes.size() == lanes.size() && cached->first_lane == lanes.front(),
                     "a route hint handed back for other lanes");
    } else if (CachedRoute* found = route_cache.find(key); found != nullptr && found->lanes == lanes) {
      cached = found;
    }
    if (cached != nullptr) {
      if (hint != nullptr) *hint = {cached, route_generation};
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
    route_store.push_back(
        std::make_unique<CachedRoute>(CachedRoute{lanes, lanes.front(), std::move(f.lanes), std::move(f.segments),
                                                  f.own_usages, f.own_links, false, std::move(caps), f.latency}));
    f.lanes.clear();
    f.segments.clear();
    f.route = route_store.back().get();
    route_cache.assign(key, f.route);
    if (hint != nullptr) *hint = {f.route, route_generation};
  }
}

}  // namespace megasim::backend
