// RegionSolver::solve_region: the exact max-min re-solve of the region around a change, instead of
// the whole connected component (fabric_region_build.cc builds R and its problem).
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

#include "backend/sim/fabric_region_solver.h"

namespace megasim::backend {
namespace {
// A region that keeps growing: after FabricParams::region_patience_rounds rounds the solve gives up
// once the usages it has solved in all its rounds exceed those of the last whole-component solve
// (re-solving the component then costs less than growing further; 0 before the first), and after
// kMaxRegionRounds in any case.
constexpr int kMaxRegionRounds = 64;
}  // namespace

double RegionSolver::outside_fastest(std::uint32_t local, double limit) {
  RegionLink& r = region_[local];
  if (r.outside_max_exact || r.outside_max <= limit) return r.outside_max;
  double fastest = 0;
  for (const LinkFlowEntry& e : sharing_.flows_on(r.link)) {
    if (!taken_.contains(e.slot)) fastest = std::max(fastest, e.rate);
  }
  r.outside_max = fastest;
  r.outside_max_exact = true;
  return fastest;
}

// R's new load and largest new rate per region link, and whether any R rate on it changed.
void RegionSolver::region_loads() {
  for (RegionLink& r : region_) {
    r.r_load = 0;
    r.r_max = 0;
    r.changed = false;
  }
  const auto add = [&](std::uint32_t local, double load, double rate, bool moved) {
    RegionLink& r = region_[local];
    r.r_load += load;
    r.r_max = std::max(r.r_max, rate);
    r.changed = r.changed || moved;
  };
  for (std::size_t i = 0; i < flows_in_.size(); ++i) {
    const double old_rate = old_rates_[i];
    const double rate = rates_[i];
    const bool moved = !(old_rate >= 0 && std::abs(rate - old_rate) <= kRateTolerance * old_rate);
    for (std::uint32_t u = usage_begin_[i]; u < usage_begin_[i + 1]; ++u) {
      const RegionUsage& usage = usages_[u];
      add(usage.local, usage.weight * rate, rate, moved);
    }
  }
}

// Step 3 for a flow of R (its new rate at `index`): finds its bottleneck, or queues the faster
// outside flows on its saturated links. Returns false when it has neither (full solve).
bool RegionSolver::check_flow(std::size_t index) {
  FlowState& f = flows_[flows_in_[index]];
  const double rate = rates_[index];
  if (rate >= caps_[index] * (1 - kRateTolerance)) return true;  // at its cap: a link it is alone on
  const double limit = rate * (1 + kRateTolerance);
  bool queued = false;
  for (const SharedUsage& k : f.shared) {
    const std::uint32_t local = link_mark_[k.link.index()].local;
    if (!saturated(local)) continue;
    const double outside = outside_fastest(local, limit);
    if (outside <= limit && region_[local].r_max <= limit) {
      f.bottleneck = {static_cast<std::int32_t>(k.usage), -1};
      return true;
    }
    if (outside <= limit) continue;
    for (const LinkFlowEntry& e : sharing_.flows_on(k.link)) {
      if (!taken_.contains(e.slot) && e.rate > limit) {
        joining_.push_back(e.slot);
        queued = true;
      }
    }
  }
  for (const std::uint32_t pair : f.pairs) {
    const std::uint32_t local = pair_mark_[pair].local;
    if (!saturated(local)) continue;
    const RegionLink& r = region_[local];
    if (r.outside_max <= limit && r.r_max <= limit) {
      f.bottleneck = {-1, static_cast<std::int32_t>(pair)};
      return true;
    }
    if (r.outside_max <= limit) continue;
    joining_.push_back(sharing_.pair(pair).partner(flows_in_[index]));  // the faster one, outside R
    queued = true;
  }
  return queued;
}

// Step 3 for a flow outside R crossing a changed link: whether it still has a bottleneck. A region
// link or pair group is judged by R's new rates, any other by the current lists.
bool RegionSolver::outside_flow_keeps_bottleneck(std::uint32_t slot) {
  const double limit = flows_[slot].rate * (1 + kRateTolerance);
  const auto region_bottleneck = [&](std::uint32_t local) {
    return saturated(local) && region_[local].r_max <= limit && outside_fastest(local, limit) <= limit;
  };
  return sharing_.find_bottleneck(
      slot,
      [&](std::uint32_t pair) {
        const LinkMark& m = pair_mark_[pair];
        return m.epoch != epoch_ ? sharing_.is_pair_bottleneck_of(static_cast<std::int32_t>(pair), slot)
                                 : region_bottleneck(m.local);
      },
      [&](topo::LinkId l) {
        const LinkMark& m = link_mark_[l.index()];
        return m.epoch != epoch_ ? sharing_.is_bottleneck_of(l, slot) : region_bottleneck(m.local);
      });
}

// Step 1, judged on the current rates (no link is in the region yet, so the bottleneck checks read
// the lists): the flows of the dirty links that may move, into joining_. A flow held by a saturated
// changed link where a flow arrives makes room for it; a changed link its flows overload (its
// capacity fell) has all of them in R, which the solve fits into it. The other flows of a changed
// link stay outside, and join R only if a new rate of R takes their bottleneck (a ring crossing a
// changed switch link seldom loses it). False when the region solve cannot handle the change.
bool RegionSolver::start_region() {
  joining_.clear();
  for (const topo::LinkId l : links_.dirty()) {
    const double capacity = links_.capacity(l);
    if (capacity <= 0) return false;
    double load = 0;
    double fastest = 0;
    bool arrivals = false;
    for (const LinkFlowEntry& e : sharing_.flows_on(l)) {
      const FlowState& f = flows_[e.slot];
      if (f.stuck || f.rate == 0 || f.private_caps.min() <= 0) return false;  // stalled: full solve
      load += e.weight * std::max(0.0, f.rate);
      fastest = std::max(fastest, f.rate);
      arrivals = arrivals || f.rate < 0;
    }
    const bool overloaded = load > capacity * (1 + kRateTolerance);
    const bool saturated = load >= capacity * (1 - kRateTolerance);
    for (const LinkFlowEntry& e : sharing_.flows_on(l)) {
      const double rate = flows_[e.slot].rate;
      const bool held = arrivals && saturated && rate > 0 && fastest <= rate * (1 + kRateTolerance);
      if (overloaded || rate < 0 || held || !outside_flow_keeps_bottleneck(e.slot)) joining_.push_back(e.slot);
    }
  }
  return true;
}

// The rest of step 3, into joining_: the outside flows of a link whose R rates moved, unless the
// link reads as it did in the last round (then they passed those checks, or joined R, and any other
// link of theirs that moved since is walked here); and those of a link whose R rates moved back this
// round.
void RegionSolver::check_outside_flows() {
  checked_.clear(flows_.slots());
  const auto check_outside = [&](std::uint32_t slot) {
    if (taken_.contains(slot) || !checked_.insert_new(slot)) return;
    if (!outside_flow_keeps_bottleneck(slot)) joining_.push_back(slot);
  };
  for (RegionLink& r : region_) {
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
      const PairGroup& g = sharing_.pair(static_cast<std::size_t>(r.pair));
      check_outside(g.a);
      check_outside(g.b);
      continue;
    }
    const LinkFlowsView list = sharing_.flows_on(r.link);
    if (list.size() == r.inside) continue;  // no flow outside R on it
    for (const LinkFlowEntry& e : list) check_outside(e.slot);
  }
}

bool RegionSolver::solve_region(int patience_rounds) {
  next_epoch();
  solved_ = Solved::kRegion;
  if (pair_mark_.size() < sharing_.pair_ids()) pair_mark_.resize(sharing_.pair_ids());
  flows_in_.clear();
  region_.clear();
  usages_.clear();
  usage_begin_.assign(1, 0);
  old_rates_.clear();
  caps_.clear();
  if (!start_region()) return false;
  for (const std::uint32_t slot : joining_) {
    if (!add_flow(slot)) return false;
  }
  std::size_t solved_usages = 0;
  for (int round = 0; round < kMaxRegionRounds; ++round) {
    if (!build_problem()) return false;
    solved_usages += problem_.entries.size();
    if (round >= patience_rounds && solved_usages > component_usages_) return false;
    ++region_rounds_;
    deepest_region_rounds_ = std::max(deepest_region_rounds_, static_cast<std::uint64_t>(round + 1));
    solver_.solve(problem_, rates_);
    region_loads();
    joining_.clear();
    for (std::size_t i = 0; i < flows_in_.size(); ++i) {
      if (!check_flow(i)) return false;
    }
    check_outside_flows();
    if (joining_.empty()) return true;
    for (const std::uint32_t slot : joining_) {
      if (!add_flow(slot)) return false;
    }
  }
  return false;
}

}  // namespace megasim::backend
