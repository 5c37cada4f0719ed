// The route of a flow: its lanes' segments (QP paths, or a sprayed split), and the usages they give
// (one per link, with the summed weight), as a flow owns it or as the route cache keeps it for the
// flows with the same lanes (fabric_route_cache.h).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/sim/fabric.h"
#include "backend/sim/fabric_link_lists.h"
#include "topology/routing.h"

namespace megasim::backend {

// One route of (part of) a lane with its share of the lane's bytes: for ECMP and adaptive routing a
// whole path per QP (weight 1/qps); for spraying one link of the fluid split (its fraction); for a
// same-server lane the NVLink path (weight 1).
struct Segment {
  topo::Path path;
  double weight = 0;
};

struct LaneRoute {
  FlowLane lane;
  std::uint32_t first_segment = 0;
  std::uint32_t segments = 0;
  bool fluid = false;  // segments are the links of a sprayed split rather than QP paths
};

// A link crossed by a flow: the weight summed over the flow's segments, and the position of the
// flow's entry in the link's flow list while the link is shared (for O(1) removal).
// 32 bytes. The link, weight and cap come from the route; position, shared_index and pair are the
// flow's state on links it crosses with others. They are "clean" (0, -1, -1) on a link the flow
// crosses alone, and on every link while no flow uses the array: a flow enters and leaves the links
// it is alone on (most of them) through its route's link ids without touching its usages.
struct Usage {
  topo::LinkId link;
  std::uint32_t position = 0;
  double weight = 0;
  double cap = 0;                  // capacity / weight (the flow's cap from this link alone)
  std::int32_t shared_index = -1;  // position in the flow's shared list; -1: alone here or paired
  std::int32_t pair = -1;          // the PairGroup of the link when the flow is paired on it
};
static_assert(sizeof(Usage) == 32);

struct LaneResult {
  bool fluid = false;  // the lane is sprayed
  bool stuck = false;  // some segment runs over a removed link for want of a live path
};

// The routing of a flow's lanes and the usages it gives (start_flow's work before the link lists).
// Flows so routed credit the bytes they carry here (per lane) rather than link by link; the links
// get their share when the cache is cleared, and Fabric::link_bytes_carried adds what is pending.
struct CachedRoute {
  std::vector<FlowLane> lanes;
  FlowLane first_lane;  // lanes.front(), kept in the object to check a RouteHint without reading lanes
  std::vector<LaneRoute> routes;
  std::vector<Segment> segments;
  std::vector<Usage> usages;        // link, weight, cap; the rest belongs to the flow that borrows it
  std::vector<topo::LinkId> links;  // usages[i].link, packed: what entering and leaving links read
  bool usages_lent = false;         // a flow uses `usages` in place (borrows_route_usages)
  PrivateCaps caps;                 // the caps of all its usages: a flow's private caps if alone everywhere
  sim::SimTime latency = 0;         // path_latency of a flow so routed
  double pending_lane_bytes = 0;    // carried by its flows, not yet credited to the links
};

}  // namespace megasim::backend
