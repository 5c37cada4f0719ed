// Link state: effective capacities, failures (with detection delay), recovery and degradation.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "backend/sim/fabric_impl.h"
#include "sim/error.h"

namespace megasim::backend {

Fabric::Impl::Impl(sim::Simulator& s, const topo::Topology& t, FabricParams p)
    : sim(s),
      topo(t),
      params(p),
      hasher(p.ecmp),
      members(t.num_links()),
      all_links(t.num_links()),
      links(t, p),
      sharing(flows, links),
      solver(links, flows, sharing) {
  validate(params);
}

Fabric::Impl::~Impl() {
  sim.cancel(recompute_event);
  for (const sim::EventHandle h : link_events) sim.cancel(h);
  for (const FlowState& f : flows.all()) {
    sim.cancel(f.completion);
    sim.cancel(f.stall_check);
  }
}

// Capacity 0 now: the flows on the link stall (the recomputation settles their progress). After the
// detection delay, if this down interval is still going on, the link leaves its ECMP groups and the
// flows crossing it are re-routed.
void Fabric::Impl::set_link_down(topo::LinkId l) {
  if (!links.state(l).up) return;
  sharing.before_capacity_change(l);
  links.set_up(l, false);
  clear_route_cache();  // the cached routes carry caps
  sharing.after_capacity_change(l);
  const std::uint32_t interval = links.begin_down_interval(l);
  links.mark_dirty(l);
  request_recompute();
  track_link_event(
      sim.schedule_after(params.failure_detection_ns, [this, l, interval] { on_failure_detected(l, interval); }));
}

// A link that failed before now: down, and out of its ECMP groups at once. The detection that
// set_link_down scheduled is made stale (a new epoch), so it does not run a second time.
void Fabric::Impl::set_link_failed(topo::LinkId l) {
  set_link_down(l);
  if (links.state(l).up) return;
  on_failure_detected(l, links.state(l).down_epoch);
  links.begin_down_interval(l);
}

// Keeps the handles of pending link events for the destructor, dropping the ones that already ran
// whenever the list doubles (amortised O(1)).
void Fabric::Impl::track_link_event(sim::EventHandle h) {
  if (link_events.size() >= 2 * link_events_after_prune + 16) {
    std::erase_if(link_events, [this](sim::EventHandle e) { return !sim.is_pending(e); });
    link_events_after_prune = link_events.size();
  }
  link_events.push_back(h);
}

void Fabric::Impl::on_failure_detected(topo::LinkId l, std::uint32_t interval) {
  const LinkState& s = links.state(l);
  if (s.up || s.down_epoch != interval) return;
  members.remove(l);
  clear_route_cache();
  // Re-route in flow-id order (the order adaptive routing sees the loads in).
  std::vector<FlowId> affected;
  for (const LinkFlowEntry& e : sharing.flows_on(l)) affected.push_back(flows[e.slot].id);
  std::sort(affected.begin(), affected.end());
  for (const FlowId id : affected) {
    const auto slot = static_cast<std::uint32_t>(flows.slot_of(id));
    const bool was_stuck = flows[slot].stuck;
    reroute(slot);
    if (flows[slot].stuck && !was_stuck) stuck_flows.push_back(id);
  }
}

// Capacity and ECMP membership come back now. Flows keep their paths (they resume if they were
// waiting on this link); flows stuck for want of any live path try again.
void Fabric::Impl::set_link_up(topo::LinkId l) {
  if (links.state(l).up) return;
  sharing.before_capacity_change(l);
  links.set_up(l, true);
  clear_route_cache();  // the cached routes carry caps, and the restored membership changes them
  sharing.after_capacity_change(l);
  members.restore(l);
  links.mark_dirty(l);
  request_recompute();
  retry_stuck_flows();
}

void Fabric::Impl::retry_stuck_flows() {
  std::vector<FlowId> retry;
  retry.swap(stuck_flows);
  for (const FlowId id : retry) {
    const std::int32_t slot = flows.slot_of(id);
    if (slot < 0) continue;
    reroute(static_cast<std::uint32_t>(slot));
    if (flows[static_cast<std::uint32_t>(slot)].stuck) stuck_flows.push_back(id);
  }
}

void Fabric::Impl::set_speed_factor(topo::LinkId l, double factor) {
  if (!(factor > 0 && factor <= 1)) {
    throw sim::ConfigError("fabric.link_speed_factor", fmt::format("{}", factor), "a fraction in (0, 1]");
  }
  sharing.before_capacity_change(l);
  links.set_speed_factor(l, factor);
  clear_route_cache();  // the cached routes carry caps
  sharing.after_capacity_change(l);
  links.mark_dirty(l);
  request_recompute();
}

}  // namespace megasim::backend
