// Exact max-min re-solve of the region around a change, instead of the whole connected component.
//
// A component joined by long ring flows spans most of a large fabric, but a change (flows started
// or finished, a link's capacity changed) moves the rates of few flows. The region solve:
//   1. checks every flow on the changed links against the change alone and starts a region R with
//      those that may move: flows not solved yet (just started), flows that lost their bottleneck,
//      flows a saturated changed link holds when a flow arrives there, and all of a changed link
//      they now overload (its capacity fell); the others keep their bottleneck unless R moves;
//   2. solves max-min over R alone: each flow of R crosses its shared links and the one link of each
//      of its pair groups (fabric_sharing.cc), whose capacities are reduced by the load of the flows
//      outside R at their current rates, and one virtual link of its own whose capacity is the
//      smallest cap of the links it crosses alone;
//   3. checks the bottleneck characterisation of max-min fairness (Bertsekas & Gallager, "Data
//      Networks" §6.5.2: feasible, and every flow has a saturated link on which no flow has a higher
//      rate; that allocation is unique) for every flow the re-solve could affect: each flow of R,
//      and each outside flow crossing a link where R's rates changed (a new flow's first rate is a
//      change). A flow of R whose saturated links carry a faster outside flow pulls that flow into
//      R; an outside flow left without a bottleneck joins R. Then 2-3 repeat.
// When the check passes, the rates are the max-min fair allocation of all flows: feasibility holds
// because R was solved within the residual capacities, the outside flows of a changed link do not
// overload it, and no other load changed; and every flow has its bottleneck (an outside flow on a
// changed link kept it in step 1 and was checked again wherever R moved; the flows never checked
// cross no link whose load or rates changed; a link a flow crosses alone is saturated exactly when
// the flow runs at its cap, with no faster flow on it).
// The region solve gives up (and the caller re-solves the whole component) on anything outside that
// argument: stalled or unsolved flows, dead links; and when growing on would cost more than the
// component solve (see kMaxRounds). Its cost follows the contention around the change, not the
// length of the flows in it. From the second round on, an outside flow is checked again only where a
// link of its reads differently from the round before (RegionLink::checked_*).
#include <algorithm>
#include <cmath>

#include "backend/sim/fabric_impl.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {
// A region that keeps growing: after FabricParams::region_patience_rounds rounds the solve gives up
// once the usages it has solved in all its rounds exceed those of the last whole-component solve
// (re-solving the component then costs less than growing further; 0 before the first), and after
// kMaxRounds in any case.
constexpr int kMaxRounds = 64;
}  // namespace

// Adds a shared link to the region (once per epoch); returns false for a dead link.
bool Fabric::Impl::region_add_link(topo::LinkId l) {
  LinkMark& m = link_mark[l.index()];
  if (m.epoch == epoch) return true;
  const double capacity = links.capacity(l);
  if (capacity <= 0) return false;
  m = {epoch, region_append(l, -1, capacity)};
  return true;
}

// Adds a pair group to the region as one link of capacity its smallest cap; false for a dead link.
bool Fabric::Impl::region_add_pair(std::uint32_t pair) {
  LinkMark& m = pair_mark[pair];
  if (m.epoch == epoch) return true;
  const double capacity = sharing.pair(pair).caps.min();
  if (capacity <= 0) return false;
  m = {epoch, region_append({}, static_cast<std::int32_t>(pair), capacity)};
  return true;
}

// Appends a region link: a real link, or (l invalid) a pair group. Returns its local number.
std::uint32_t Fabric::Impl::region_append(topo::LinkId l, std::int32_t pair, double capacity) {
  RegionLink& r = region.links.emplace_back();
  r.link = l;
  r.pair = pair;
  r.capacity = capacity;
  return static_cast<std::uint32_t>(region.links.size() - 1);
}

// Adds a flow to R with its shared links and pair groups; false for a flow the region solve does not
// handle.
bool Fabric::Impl::region_add_flow(std::uint32_t slot) {
  if (flows.epoch(slot) == epoch) return true;
  const FlowState& f = flows[slot];
  if (f.stuck || f.rate == 0 || f.private_caps.min() <= 0) return false;  // stalled: full solve
  flows.epoch(slot) = epoch;
  component_flows.push_back(slot);
  for (const SharedUsage& k : f.shared) {
    if (!region_add_link(k.link)) return false;
    const std::uint32_t local = link_mark[k.link.index()].local;
    RegionLink& r = region.links[local];
    ++r.inside;
    r.inside_load += k.weight * std::max(0.0, f.rate);
    if (f.rate <= 0) ++r.inside_unsolved;
    region.usages.push_back({local, k.weight});
  }
  for (const std::uint32_t pair : f.pairs) {
    if (!region_add_pair(pair)) return false;
    const std::uint32_t local = pair_mark[pair].local;
    ++region.links[local].inside;
    region.usages.push_back({local, 1.0});
  }
  region.usage_begin.push_back(static_cast<std::uint32_t>(region.usages.size()));
  region.old_rates.push_back(f.rate);
  region.caps.push_back(f.private_caps.min());
  return true;
}

// Per region link: the load and largest rate of the flows outside R (current rates); builds the
// max-min problem of R over the residual capacities. A link that one flow of R crosses only caps
// that flow, like the links it crosses alone: all of them fold into one link of the flow's own (the
// solver would fold them likewise; folded here, they stay out of its lists).
bool Fabric::Impl::build_region_problem() {
  problem.clear();
  const auto add_link = [&](RegionLink& r, double residual) {
    r.residual = residual;
    r.problem_link = r.inside == 1 ? RegionLink::kFolded : problem.add_link(residual);
  };
  for (RegionLink& r : region.links) {
    r.outside_load = 0;
    r.outside_max = 0;
    r.outside_max_exact = true;  // pair groups and links with no outside flow: exact
    if (r.pair >= 0) {
      if (r.inside == 2) {
        add_link(r, r.capacity);
        continue;
      }
      const PairGroup& g = sharing.pair(static_cast<std::size_t>(r.pair));
      const double outside_rate = flows[flows.epoch(g.a) == epoch ? g.b : g.a].rate;
      if (outside_rate <= 0) return false;  // unsolved or stalled neighbour: full solve
      r.outside_load = r.outside_max = outside_rate;
      add_link(r, std::max(0.0, r.capacity - outside_rate));
      continue;
    }
    // A shared link: the outside flows' load is the link's total less R's part; their largest rate
    // is bounded by the link's, and scanned for only when the bound does not settle a check.
    const SharedTotals& totals = sharing.totals_of(r.link);
    if (totals.flows == r.inside) {  // every flow on it is in R: nothing outside to hold
      add_link(r, r.capacity);
      continue;
    }
    if (totals.unsolved > r.inside_unsolved) return false;  // unsolved or stalled neighbour: full solve
    const double load = std::max(0.0, totals.load - r.inside_load);
    r.outside_load = load;
    r.outside_max = totals.fastest;
    r.outside_max_exact = false;
    add_link(r, std::max(0.0, r.capacity - load));
  }
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    double cap = region.caps[i];
    for (std::uint32_t u = region.usage_begin[i]; u < region.usage_begin[i + 1]; ++u) {
      const RegionScratch::Usage& usage = region.usages[u];
      const RegionLink& r = region.links[usage.local];
      if (r.problem_link == RegionLink::kFolded) {
        cap = std::min(cap, r.residual / usage.weight);
      } else {
        problem.add_usage(r.problem_link, usage.weight);
      }
    }
    if (std::isfinite(cap)) problem.add_usage(problem.add_link(cap), 1.0);
    problem.end_flow();
  }
  return true;
}

double Fabric::Impl::outside_fastest(std::uint32_t local, double limit) {
  RegionLink& r = region.links[local];
  if (r.outside_max_exact || r.outside_max <= limit) return r.outside_max;
  double fastest = 0;
  for (const LinkFlowEntry& e : sharing.flows_on(r.link)) {
    if (flows.epoch(e.slot) != epoch) fastest = std::max(fastest, e.rate);
  }
  r.outside_max = fastest;
  r.outside_max_exact = true;
  return fastest;
}

// R's new load and largest new rate per region link, and whether any R rate on it changed.
void Fabric::Impl::region_loads() {
  for (RegionLink& r : region.links) {
    r.r_load = 0;
    r.r_max = 0;
    r.changed = false;
  }
  const auto add = [&](std::uint32_t local, double load, double rate, bool moved) {
    RegionLink& r = region.links[local];
    r.r_load += load;
    r.r_max = std::max(r.r_max, rate);
    r.changed = r.changed || moved;
  };
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    const double old_rate = region.old_rates[i];
    const double rate = rates[i];
    const bool moved = !(old_rate >= 0 && std::abs(rate - old_rate) <= kRateTolerance * old_rate);
    for (std::uint32_t u = region.usage_begin[i]; u < region.usage_begin[i + 1]; ++u) {
      const RegionScratch::Usage& usage = region.usages[u];
      add(usage.local, usage.weight * rate, rate, moved);
    }
  }
}

bool Fabric::Impl::region_link_saturated(std::uint32_t local) const {
  const RegionLink& r = region.links[local];
  return r.outside_load + r.r_load >= r.capacity * (1 - kRateTolerance);
}

// Step 3 for a flow of R (its new rate at `index`): finds its bottleneck, or queues the faster
// outside flows on its saturated links. Returns false when it has neither (full solve).
bool Fabric::Impl::check_region_flow(std::size_t index) {
  FlowState& f = flows[component_flows[index]];
  const double rate = rates[index];
  if (rate >= region.caps[index] * (1 - kRateTolerance)) return true;  // at its cap: a link it is alone on
  const double limit = rate * (1 + kRateTolerance);
  bool queued = false;
  for (const SharedUsage& k : f.shared) {
    const std::uint32_t local = link_mark[k.link.index()].local;
    if (!region_link_saturated(local)) continue;
    const double outside = outside_fastest(local, limit);
    if (outside <= limit && region.links[local].r_max <= limit) {
      f.bottleneck = {static_cast<std::int32_t>(k.usage), -1};
      return true;
    }
    if (outside <= limit) continue;
    for (const LinkFlowEntry& e : sharing.flows_on(k.link)) {
      if (flows.epoch(e.slot) != epoch && e.rate > limit) {
        region.joining.push_back(e.slot);
        queued = true;
      }
    }
  }
  for (const std::uint32_t pair : f.pairs) {
    const std::uint32_t local = pair_mark[pair].local;
    if (!region_link_saturated(local)) continue;
    const RegionLink& r = region.links[local];
    if (r.outside_max <= limit && r.r_max <= limit) {
      f.bottleneck = {-1, static_cast<std::int32_t>(pair)};
      return true;
    }
    if (r.outside_max <= limit) continue;
    region.joining.push_back(sharing.pair(pair).partner(component_flows[index]));  // the faster one, outside R
    queued = true;
  }
  return queued;
}

// Step 3 for a flow outside R crossing a changed link: whether it still has a bottleneck. A region
// link or pair group is judged by R's new rates, any other by the current lists.
bool Fabric::Impl::outside_flow_keeps_bottleneck(std::uint32_t slot) {
  const double limit = flows[slot].rate * (1 + kRateTolerance);
  const auto region_bottleneck = [&](std::uint32_t local) {
    return region_link_saturated(local) && region.links[local].r_max <= limit && outside_fastest(local, limit) <= limit;
  };
  return sharing.find_bottleneck(
      slot,
      [&](std::uint32_t pair) {
        const LinkMark& m = pair_mark[pair];
        return m.epoch != epoch ? sharing.is_pair_bottleneck_of(static_cast<std::int32_t>(pair), slot)
                                : region_bottleneck(m.local);
      },
      [&](topo::LinkId l) {
        const LinkMark& m = link_mark[l.index()];
        return m.epoch != epoch ? sharing.is_bottleneck_of(l, slot) : region_bottleneck(m.local);
      });
}

bool Fabric::Impl::recompute_region() {
  next_epoch();
  if (pair_mark.size() < sharing.pair_ids()) pair_mark.resize(sharing.pair_ids());
  component_flows.clear();
  region.links.clear();
  region.usages.clear();
  region.usage_begin.assign(1, 0);
  region.old_rates.clear();
  region.caps.clear();
  // Step 1, judged on the current rates (no link is in the region yet, so the bottleneck checks read
  // the lists). A flow held by a saturated changed link where a flow arrives makes room for it; a
  // changed link its flows overload (its capacity fell) has all of them in R, which the solve fits
  // into it. The other flows of a changed link stay outside, and join R only if a new rate of R
  // takes their bottleneck (a ring crossing a changed switch link seldom loses it).
  region.joining.clear();
  for (const topo::LinkId l : links.dirty()) {
    const double capacity = links.capacity(l);
    if (capacity <= 0) return false;
    double load = 0;
    double fastest = 0;
    bool arrivals = false;
    for (const LinkFlowEntry& e : sharing.flows_on(l)) {
      const FlowState& f = flows[e.slot];
      if (f.stuck || f.rate == 0 || f.private_caps.min() <= 0) return false;  // stalled: full solve
      load += e.weight * std::max(0.0, f.rate);
      fastest = std::max(fastest, f.rate);
      arrivals = arrivals || f.rate < 0;
    }
    const bool overloaded = load > capacity * (1 + kRateTolerance);
    const bool saturated = load >= capacity * (1 - kRateTolerance);
    for (const LinkFlowEntry& e : sharing.flows_on(l)) {
      const double rate = flows[e.slot].rate;
      const bool held = arrivals && saturated && rate > 0 && fastest <= rate * (1 + kRateTolerance);
      if (overloaded || rate < 0 || held || !outside_flow_keeps_bottleneck(e.slot)) region.joining.push_back(e.slot);
    }
  }
  for (const std::uint32_t slot : region.joining) {
    if (!region_add_flow(slot)) return false;
  }
  std::size_t solved_usages = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    if (!build_region_problem()) return false;
    solved_usages += problem.entries.size();
    if (round >= params.region_patience_rounds && solved_usages > component_usages) return false;
    ++region_rounds;
    deepest_region_rounds = std::max(deepest_region_rounds, static_cast<std::uint64_t>(round + 1));
    solver.solve(problem, rates);
    region_loads();
    region.joining.clear();
    for (std::size_t i = 0; i < component_flows.size(); ++i) {
      if (!check_region_flow(i)) return false;
    }
    if (++region.check_stamp == 0) {  // wrapped: clear the stamps so none matches by accident
      for (FlowState& f : flows.all()) f.check_stamp = 0;
      region.check_stamp = 1;
    }
    const auto check_outside = [&](std::uint32_t slot) {
      if (flows.epoch(slot) == epoch) return;
      FlowState& g = flows[slot];
      if (g.check_stamp == region.check_stamp) return;
      g.check_stamp = region.check_stamp;
      if (!outside_flow_keeps_bottleneck(slot)) region.joining.push_back(slot);
    };
    // The outside flows of a link whose R rates moved, unless the link reads as it did in the last
    // round (then they passed those checks, or joined R, and any other link of theirs that moved
    // since is walked here); and those of a link whose R rates moved back this round.
    for (RegionLink& r : region.links) {
      const bool as_last_round = r.checked && r.checked_changed == r.changed && r.checked_inside == r.inside &&
                                 r.checked_r_load == r.r_load && r.checked_r_max == r.r_max;
      const bool changed_last_round = r.checked && r.checked_changed;
      r.checked = true;
      r.checked_changed = r.changed;
      r.checked_inside = r.inside;
      r.checked_r_load = r.r_load;
      r.checked_r_max = r.r_max;
      if (as_last_round || !(r.changed || changed_last_round)) continue;
      if (r.pair >= 0) {
        if (r.inside == 2) continue;
        const PairGroup& g = sharing.pair(static_cast<std::size_t>(r.pair));
        check_outside(g.a);
        check_outside(g.b);
        continue;
      }
      const LinkFlowsView list = sharing.flows_on(r.link);
      if (list.size() == r.inside) continue;  // no flow outside R on it
      for (const LinkFlowEntry& e : list) check_outside(e.slot);
    }
    if (region.joining.empty()) {
      links.clear_dirty();
      return true;
    }
    for (const std::uint32_t slot : region.joining) {
      if (!region_add_flow(slot)) return false;
    }
  }
  return false;
}

}  // namespace megasim::backend
