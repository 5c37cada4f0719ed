// Flow lifecycle: start, progress accounting, completion, and the link <-> flow lists.
#include <algorithm>
#include <cmath>
#include <span>

#include "backend/sim/fabric_impl.h"
#include "sim/error.h"

namespace megasim::backend {

FlowId Fabric::Impl::start_flow(const FlowSpec& spec) {
  const RouteHint* hint = spec.route_hint;
  if (route_cache.current(hint)) {
    // The cached route's record loads while the lanes are checked (a pipeline transfer's route is
    // seldom still in cache when its next transfer starts).
    const auto* route = reinterpret_cast<const char*>(hint->route);
    for (std::size_t line = 0; line < sizeof(CachedRoute); line += 64) __builtin_prefetch(route + line);
  }
  MEGASIM_ASSERT(!spec.lanes.empty(), "a flow needs at least one lane");
  MEGASIM_ASSERT(spec.bytes_per_lane > 0 && std::isfinite(spec.bytes_per_lane), "flow bytes must be > 0");
  for (const FlowLane& lane : spec.lanes) {
    MEGASIM_ASSERT(lane.src != lane.dst, "a flow lane needs distinct GPUs");
    MEGASIM_ASSERT(
        lane.src.valid() && lane.dst.valid() && lane.src.value < topo.num_gpus() && lane.dst.value < topo.num_gpus(),
        "flow lane names an unknown GPU");
  }
  const std::uint32_t slot = flows.allocate();
  flows.activate(slot);
  FlowState& f = flows[slot];
  f.add_path_latency = spec.add_path_latency;
  f.stuck = false;
  f.stall_reported = false;
  f.bottleneck = {};
  f.bytes_per_lane = spec.bytes_per_lane;
  f.remaining = spec.bytes_per_lane;
  f.rate = -1;
  f.done_at_route_change = 0;
  f.start = f.last_update = sim.now();
  f.completion = f.stall_check = {};
  MEGASIM_ASSERT(!(spec.on_complete && spec.on_sent), "a flow has on_complete or on_sent, not both");
  f.on_complete = spec.on_complete;
  f.on_sent = spec.on_sent;
  route_flow(f, spec.lanes, spec.route_hint);
  if (f.stuck) stuck_flows.push_back(f.id);
  sharing.enter(slot, /*mark_links_dirty=*/false);
  if (!f.stuck && !recompute_pending && admit_without_resolve(slot)) {
    ++skipped_recomputations;
    apply_rate(slot, admitted_rate);
    if (recompute_observer) recompute_observer();
  } else {
    // The changed links are those it shares: it is alone on the others (or on a slack list, which
    // constrains nobody), and reached through these; a flow that shares none needs one changed link
    // to be taken into the re-solve.
    const FlowState& g = flows[slot];
    const std::span<const topo::LinkId> route_links = links_of(g);
    MEGASIM_ASSERT(!route_links.empty(), "a flow crosses no link");
    if (g.shared.empty() && g.pairs.empty()) {
      links.mark_dirty(route_links.front());
    } else {
      for (const topo::LinkId l : route_links) {
        if (sharing.binds(l)) links.mark_dirty(l);
      }
    }
    request_recompute();
  }
  return f.id;
}

// Brings `remaining` up to now at the current rate.
void Fabric::Impl::settle(FlowState& f) {
  if (f.rate > 0) f.remaining -= f.rate * sim::to_seconds(sim.now() - f.last_update);
  f.last_update = sim.now();
}

double Fabric::Impl::remaining_now(const FlowState& f) const {
  const double moved = std::max(0.0, f.rate) * sim::to_seconds(sim.now() - f.last_update);
  return std::max(0.0, f.remaining - moved);
}

// Credits the bytes moved since the usages last changed to the links of the current usages.
void Fabric::Impl::credit_carried(FlowState& f) {
  const double done = f.bytes_per_lane - std::max(0.0, f.remaining);
  const double delta = done - f.done_at_route_change;
  if (f.route != nullptr) {
    f.route->pending_lane_bytes += delta;
  } else {
    for (const Usage& u : f.usages) links.credit(u.link, u.weight * delta);
  }
  f.done_at_route_change = done;
}

// Merges the segments' links into one usage per link, sorted by link.
void Fabric::Impl::build_usages(FlowState& f) {
  usage_scratch.clear();
  for (const Segment& s : f.segments) {
    for (const topo::LinkId l : s.path.view()) usage_scratch.push_back({.link = l, .weight = s.weight});
  }
  std::sort(usage_scratch.begin(), usage_scratch.end(), [](const Usage& a, const Usage& b) { return a.link < b.link; });
  release_usages(f);
  std::vector<Usage>& own = f.own_usages;
  for (const Usage& u : usage_scratch) {
    if (!own.empty() && own.back().link == u.link) {
      own.back().weight += u.weight;
    } else {
      own.push_back(u);
    }
  }
  for (Usage& u : own) u.cap = usage_cap(links, u);
  f.own_links.clear();
  for (const Usage& u : own) f.own_links.push_back(u.link);
  f.usages = own;
}

void Fabric::Impl::install_usages(std::uint32_t slot, bool mark_links_dirty) {
  build_usages(flows[slot]);
  sharing.enter(slot, mark_links_dirty);
}

void Fabric::Impl::uninstall_usages(std::uint32_t slot, bool mark_links_dirty) {
  sharing.leave(slot, mark_links_dirty);
  release_usages(flows[slot]);
}

// The longest lane's latency: a QP path's sum of link latencies (the slowest QP), or for a sprayed
// lane the byte-weighted mean over its paths (each tier's weights sum to 1).
sim::SimTime Fabric::Impl::path_latency(const FlowState& f) const {
  double longest = 0;
  const std::span<const Segment> segments = segments_of(f);
  for (const LaneRoute& lane : lanes_of(f)) {
    double lane_latency = 0;
    for (std::uint32_t s = lane.first_segment; s < lane.first_segment + lane.segments; ++s) {
      double path = 0;
      for (const topo::LinkId l : segments[s].path.view()) path += static_cast<double>(topo.link(l).latency_ns);
      lane_latency = lane.fluid ? lane_latency + segments[s].weight * path : std::max(lane_latency, path);
    }
    longest = std::max(longest, lane_latency);
  }
  return static_cast<sim::SimTime>(std::llround(longest));
}

void Fabric::Impl::complete(std::uint32_t slot) {
  FlowState& f = flows[slot];
  settle(f);
  // The completion was scheduled at the ceiling of the exact time, so up to one nanosecond's worth
  // of bytes may be overshot.
  const double tolerance = 1e-9 * f.bytes_per_lane + f.rate * 1e-9;
  MEGASIM_ASSERT(std::abs(f.remaining) <= tolerance, "flow completed with bytes left");
  f.remaining = 0;
  credit_carried(f);
  for (const Segment& s : segments_of(f)) drop_segment_load(s);
  const bool rates_unchanged = removal_keeps_rates(slot);
  uninstall_usages(slot, /*mark_links_dirty=*/!rates_unchanged);
  if (rates_unchanged) {
    ++skipped_recomputations;
  } else {
    request_recompute();
  }
  sim.cancel(f.stall_check);
  const sim::SimTime latency = !f.add_path_latency ? 0 : f.latency >= 0 ? f.latency : path_latency(f);
  ++completed;
  if (params.keep_flow_records)
    records.push_back(
        {f.id, f.start, sim.now() + latency, f.bytes_per_lane, static_cast<std::int32_t>(lanes_of(f).size())});
  const FlowId id = f.id;
  std::function<void(FlowId)> callback = std::move(f.on_complete);
  std::function<void(FlowId, sim::SimTime)> sent = std::move(f.on_sent);
  f.on_complete = nullptr;
  f.on_sent = nullptr;
  flows.release(slot);
  // Observers see the allocation after every change, whether re-solved or kept.
  if (rates_unchanged && recompute_observer) recompute_observer();
  // Last: the callbacks may start flows, which can reallocate `flows`.
  if (sent) sent(id, sim::add_time(sim.now(), latency, "a flow's delivery"));
  if (!callback) return;
  if (latency > 0) {
    sim.schedule_after(latency, [callback = std::move(callback), id] { callback(id); });
  } else {
    callback(id);
  }
}

}  // namespace megasim::backend
