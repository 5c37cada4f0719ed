// RouteCache: the cached routes, their index by first lane and the bytes credited to them.
#include "backend/sim/fabric_route_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.h"

namespace megasim::backend {

namespace {
LaneKey key_of(const FlowLane& lane) {
  return {lane.src.value, lane.dst.value, lane.connection};
}
}  // namespace

CachedRoute* RouteCache::find(const std::vector<FlowLane>& lanes, RouteHint* hint) {
  CachedRoute* cached = nullptr;
  if (current(hint)) {
    cached = hint->route;
    MEGASIM_ASSERT(cached->lanes.size() == lanes.size() && cached->first_lane == lanes.front(),
                   "a route hint handed back for other lanes");
  } else if (CachedRoute* found = index_.find(key_of(lanes.front())); found != nullptr && found->lanes == lanes) {
    cached = found;
  }
  if (cached != nullptr && hint != nullptr) *hint = {cached, generation_};
  return cached;
}

CachedRoute* RouteCache::add(CachedRoute route, RouteHint* hint) {
  store_.push_back(std::make_unique<CachedRoute>(std::move(route)));
  CachedRoute* stored = store_.back().get();
  index_.assign(key_of(stored->first_lane), stored);
  if (hint != nullptr) *hint = {stored, generation_};
  return stored;
}

void RouteCache::clear(LinkTable& links) {
  for (const std::unique_ptr<CachedRoute>& r : store_) {
    for (const Usage& u : r->usages) links.credit(u.link, u.weight * r->pending_lane_bytes);
  }
  index_.clear();
  store_.clear();
  ++generation_;
}

double RouteCache::with_pending_bytes(topo::LinkId l, double carried) const {
  for (const std::unique_ptr<CachedRoute>& r : store_) {
    const auto u = std::ranges::lower_bound(r->usages, l, {}, &Usage::link);
    if (u != r->usages.end() && u->link == l) carried += u->weight * r->pending_lane_bytes;
  }
  return carried;
}

std::string RouteCache::check() const {
  const auto clean = [](const Usage& u) { return u.position == 0 && u.shared_index < 0 && u.pair < 0; };
  for (const std::unique_ptr<CachedRoute>& r : store_) {
    if (r->lanes.empty() || !(r->first_lane == r->lanes.front())) return "a cached route's first lane is stale";
    if (r->links.size() != r->usages.size() || !std::ranges::equal(r->links, r->usages, {}, {}, &Usage::link))
      return "a cached route's link ids are out of step with its usages";
    if (!r->usages_lent && !std::ranges::all_of(r->usages, clean)) return "a cached route's idle usages are not clean";
  }
  if (index_.size() > store_.size()) return "the route index names more routes than are stored";
  return "";
}

}  // namespace megasim::backend
