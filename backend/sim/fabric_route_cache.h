// The route cache of the fabric: ECMP and spray routes under the current ECMP membership, by a
// flow's first lane (a communicator's transfers reuse their connections, and so their paths, all
// iteration; adaptive routes depend on the load and are not kept). Flows routed from it read its
// lanes and segments in place and credit the bytes they carry to it (CachedRoute::pending_lane_bytes).
// Invariant (check()): every stored route stays put until clear() (flows and RouteHints point at
// it), each route's link ids are its usages' links, and an idle route's usages are clean. The index
// (route_index.h) points into the store; a hint from before the last clear() is stale (generation).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/sim/fabric.h"
#include "backend/sim/fabric_link_table.h"
#include "backend/sim/fabric_route.h"
#include "backend/sim/route_index.h"

namespace megasim::backend {

class RouteCache {
 public:
  // Whether a hint names a stored route (it was left since the last clear()).
  [[nodiscard]] bool current(const RouteHint* hint) const {
    return hint != nullptr && hint->route != nullptr && hint->generation == generation_;
  }
  // The route of flows with exactly these lanes: the hint's when current (the caller's contract:
  // the hint was left for these lanes), else the one stored under the first lane when its lanes are
  // these; null when none. Leaves a found route in `hint` (optional).
  CachedRoute* find(const std::vector<FlowLane>& lanes, RouteHint* hint);
  // Stores a route under its first lane (a route stored there before, for other lanes, stays for
  // the flows that use it); leaves it in `hint` (optional).
  CachedRoute* add(CachedRoute route, RouteHint* hint);
  // Credits every route's pending bytes to its links, and drops the routes (the flows that use one
  // must own a copy first); hints from before are stale.
  void clear(LinkTable& links);

  [[nodiscard]] std::span<const std::unique_ptr<CachedRoute>> routes() const { return store_; }
  // `carried` plus the bytes its routes carried on link l and have not credited yet, added route by
  // route in the order stored.
  [[nodiscard]] double with_pending_bytes(topo::LinkId l, double carried) const;

  // The first broken invariant, or "".
  [[nodiscard]] std::string check() const;

 private:
  RouteIndex index_;
  std::uint64_t generation_ = 1;  // counts clear() calls
  std::vector<std::unique_ptr<CachedRoute>> store_;
};

}  // namespace megasim::backend
