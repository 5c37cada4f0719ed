// The flows of the fabric (Fabric::Impl's FlowTable): their records by slot, slots reused, and the
// map from a flow's id to its slot.
// Invariant (check()): a slot is free exactly when its flow is inactive; every active flow's id maps
// to its slot, and a completed flow's id to none.
// A FlowState's sharing fields (usages' positions and classes, private caps, pairs, shared) are kept
// by the SharingIndex, its rate by the rate recomputation; they live in the record because the hot
// paths read them together.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "backend/sim/fabric.h"
#include "backend/sim/fabric_link_lists.h"
#include "backend/sim/fabric_route.h"
#include "sim/error.h"

namespace megasim::backend {

// The last constraint found to be a flow's bottleneck: the link of one of its usages (by index, so
// that its current classification can be checked: a link shared then may be paired now), or a pair
// group (a group id may have been reused since). A hint, checked on use.
struct BottleneckHint {
  std::int32_t usage = -1;
  std::int32_t pair = -1;
};

// A usage of a flow on a link it shares (not as a pair), with copies of the link and weight so that
// the region solve, which walks these for every flow it takes in, reads one compact array rather
// than the flow's long usage list.
struct SharedUsage {
  std::uint32_t usage;  // index into the flow's usages
  topo::LinkId link;
  double weight;
};

struct alignas(64) FlowState {
  // The fields the bottleneck checks read for every neighbouring flow come first, so that they share
  // a cache line or two (records start on a line): the rate, the bottleneck hint, its usages, its
  // private caps, pairs and shared links.
  FlowId id;
  bool active = false;
  bool add_path_latency = true;
  bool stuck = false;  // some segment waits for a link to come back (no other path)
  bool stall_reported = false;
  double rate = -1;  // per lane, bytes/s; -1 until the first recomputation
  // The fastest it can ever run on its links: the smallest cap (capacity / weight) among them, from
  // its links' capacities when it entered them (kept current as capacities change).
  double rate_bound = 0;
  BottleneckHint bottleneck;
  // Sorted by link, one entry per link: own_usages, or the array of its cached route, used in place
  // while it is the route's only flow (borrows_route_usages), which spares a copy of the route per
  // start.
  std::span<Usage> usages;
  PrivateCaps private_caps;  // caps of the usages on links it crosses alone (fabric_sharing.cc)
  boost::container::small_vector<std::uint32_t, 4> pairs;  // the PairGroups it belongs to (inline: few)
  std::vector<SharedUsage> shared;                         // its usages on links shared but not as a pair
  std::vector<Usage> own_usages;
  std::vector<topo::LinkId> own_links;  // the links of own_usages while it has no route (links_of)
  double bytes_per_lane = 0;
  double remaining = 0;             // per lane, as of last_update
  double done_at_route_change = 0;  // per-lane bytes done when the usages last changed
  sim::SimTime start = 0;
  sim::SimTime last_update = 0;
  sim::EventHandle completion;
  sim::EventHandle stall_check;
  std::function<void(FlowId)> on_complete;
  std::function<void(FlowId, sim::SimTime)> on_sent;
  std::vector<LaneRoute> lanes;   // empty while `route` holds them (use lanes_of)
  std::vector<Segment> segments;  // likewise (segments_of)
  sim::SimTime latency = -1;      // path_latency() of the current routes; -1: not known yet
  // The cache entry it was routed from, which holds its lanes and segments (then empty here); null
  // for a flow that owns its route (not cacheable, re-routed, or the cache was cleared).
  CachedRoute* route = nullptr;
};

static_assert(std::is_nothrow_move_constructible_v<FlowState>,
              "flows grow by moving: a FlowState's usages span must keep pointing at its own_usages");

// Whether the flow's usages are its cached route's array, used in place.
inline bool borrows_route_usages(const FlowState& f) {
  return f.route != nullptr && f.usages.data() == f.route->usages.data();
}

// A flow's lanes and segments: the cached route's while it has one, else its own.
inline std::span<const LaneRoute> lanes_of(const FlowState& f) {
  return f.route != nullptr ? std::span<const LaneRoute>(f.route->routes) : std::span<const LaneRoute>(f.lanes);
}
inline std::span<const Segment> segments_of(const FlowState& f) {
  return f.route != nullptr ? std::span<const Segment>(f.route->segments) : std::span<const Segment>(f.segments);
}
// A flow's links, in the order of its usages: its cached route's while it has one, else its own.
inline std::span<const topo::LinkId> links_of(const FlowState& f) {
  return f.route != nullptr ? std::span<const topo::LinkId>(f.route->links)
                            : std::span<const topo::LinkId>(f.own_links);
}

class FlowTable {
 public:
  // A slot for a new flow: the last one freed, else a new one at the end (which may move the
  // records: references into the table do not survive it).
  std::uint32_t allocate();
  // Makes the flow in `slot` (allocated) active under the next id, in order from 0.
  FlowId activate(std::uint32_t slot);
  // The flow in `slot` is done: inactive, its slot free, its id found no more.
  void release(std::uint32_t slot);

  [[nodiscard]] FlowState& operator[](std::uint32_t slot) { return flows_[slot]; }
  [[nodiscard]] const FlowState& operator[](std::uint32_t slot) const { return flows_[slot]; }
  // Every record by slot, inactive ones included.
  [[nodiscard]] std::span<FlowState> all() { return flows_; }
  [[nodiscard]] std::span<const FlowState> all() const { return flows_; }
  [[nodiscard]] std::size_t slots() const { return flows_.size(); }
  [[nodiscard]] std::size_t active() const { return flows_.size() - free_.size(); }
  [[nodiscard]] std::size_t ids() const { return slot_of_id_.size(); }  // ids handed out
  // The slot of a flow by id (precondition: an id handed out), -1 once completed.
  [[nodiscard]] std::int32_t slot_of(FlowId id) const {
    MEGASIM_ASSERT(id.valid() && id.index() < slot_of_id_.size(), "unknown flow id");
    return slot_of_id_[id.index()];
  }
  // The active flow of this id, or null once completed.
  [[nodiscard]] const FlowState* find(FlowId id) const {
    const std::int32_t slot = slot_of(id);
    return slot < 0 ? nullptr : &flows_[static_cast<std::size_t>(slot)];
  }

  // The first broken invariant, or "".
  [[nodiscard]] std::string check() const;

 private:
  std::vector<FlowState> flows_;          // by slot
  std::vector<std::uint32_t> free_;       // free slots, the last freed last
  std::vector<std::int32_t> slot_of_id_;  // FlowId value -> slot, -1 once completed
};

}  // namespace megasim::backend
