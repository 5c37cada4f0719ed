// RegionSolver: the region R of a region solve (its links, pair groups and flows, taken in as the
// rounds grow it) and the max-min problem of R over the residual capacities that each round solves
// (fabric_local_solve.cc explains the solve).
#include <algorithm>
#include <cmath>

#include "backend/sim/fabric_region_solver.h"

namespace megasim::backend {

// Adds a shared link to the region (once per solve); returns false for a dead link.
bool RegionSolver::add_link(topo::LinkId l) {
  LinkMark& m = link_mark_[l.index()];
  if (m.epoch == epoch_) return true;
  const double capacity = links_.capacity(l);
  if (capacity <= 0) return false;
  m = {epoch_, append(l, -1, capacity)};
  return true;
}

// Adds a pair group to the region as one link of capacity its smallest cap; false for a dead link.
bool RegionSolver::add_pair(std::uint32_t pair) {
  LinkMark& m = pair_mark_[pair];
  if (m.epoch == epoch_) return true;
  const double capacity = sharing_.pair(pair).caps.min();
  if (capacity <= 0) return false;
  m = {epoch_, append({}, static_cast<std::int32_t>(pair), capacity)};
  return true;
}

// Appends a region link: a real link, or (l invalid) a pair group. Returns its local number.
std::uint32_t RegionSolver::append(topo::LinkId l, std::int32_t pair, double capacity) {
  RegionLink& r = region_.emplace_back();
  r.link = l;
  r.pair = pair;
  r.capacity = capacity;
  return static_cast<std::uint32_t>(region_.size() - 1);
}

// Adds a flow to R with its shared links and pair groups; false for a flow the region solve does not
// handle.
bool RegionSolver::add_flow(std::uint32_t slot) {
  if (taken_.contains(slot)) return true;
  const FlowState& f = flows_[slot];
  if (f.stuck || f.rate == 0 || f.private_caps.min() <= 0) return false;  // stalled: full solve
  taken_.insert(slot);
  flows_in_.push_back(slot);
  for (const SharedUsage& k : f.shared) {
    if (!add_link(k.link)) return false;
    const std::uint32_t local = link_mark_[k.link.index()].local;
    RegionLink& r = region_[local];
    ++r.inside;
    r.inside_load += k.weight * std::max(0.0, f.rate);
    if (f.rate <= 0) ++r.inside_unsolved;
    usages_.push_back({local, k.weight});
  }
  for (const std::uint32_t pair : f.pairs) {
    if (!add_pair(pair)) return false;
    const std::uint32_t local = pair_mark_[pair].local;
    ++region_[local].inside;
    usages_.push_back({local, 1.0});
  }
  usage_begin_.push_back(static_cast<std::uint32_t>(usages_.size()));
  old_rates_.push_back(f.rate);
  caps_.push_back(f.private_caps.min());
  return true;
}

// Per region link: the load and largest rate of the flows outside R (current rates); builds the
// max-min problem of R over the residual capacities. A link that one flow of R crosses only caps
// that flow, like the links it crosses alone: all of them fold into one link of the flow's own (the
// solver would fold them likewise; folded here, they stay out of its lists).
bool RegionSolver::build_problem() {
  problem_.clear();
  const auto add_problem_link = [&](RegionLink& r, double residual) {
    r.residual = residual;
    r.problem_link = r.inside == 1 ? RegionLink::kFolded : problem_.add_link(residual);
  };
  for (RegionLink& r : region_) {
    r.outside_load = 0;
    r.outside_max = 0;
    r.outside_max_exact = true;  // pair groups and links with no outside flow: exact
    if (r.pair >= 0) {
      if (r.inside == 2) {
        add_problem_link(r, r.capacity);
        continue;
      }
      const PairGroup& g = sharing_.pair(static_cast<std::size_t>(r.pair));
      const double outside_rate = flows_[taken_.contains(g.a) ? g.b : g.a].rate;
      if (outside_rate <= 0) return false;  // unsolved or stalled neighbour: full solve
      r.outside_load = r.outside_max = outside_rate;
      add_problem_link(r, std::max(0.0, r.capacity - outside_rate));
      continue;
    }
    // A shared link: the outside flows' load is the link's total less R's part; their largest rate
    // is bounded by the link's, and scanned for only when the bound does not settle a check.
    const SharedTotals& totals = sharing_.totals_of(r.link);
    if (totals.flows == r.inside) {  // every flow on it is in R: nothing outside to hold
      add_problem_link(r, r.capacity);
      continue;
    }
    if (totals.unsolved > r.inside_unsolved) return false;  // unsolved or stalled neighbour: full solve
    const double load = std::max(0.0, totals.load - r.inside_load);
    r.outside_load = load;
    r.outside_max = totals.fastest;
    r.outside_max_exact = false;
    add_problem_link(r, std::max(0.0, r.capacity - load));
  }
  for (std::size_t i = 0; i < flows_in_.size(); ++i) {
    double cap = caps_[i];
    for (std::uint32_t u = usage_begin_[i]; u < usage_begin_[i + 1]; ++u) {
      const RegionUsage& usage = usages_[u];
      const RegionLink& r = region_[usage.local];
      if (r.problem_link == RegionLink::kFolded) {
        cap = std::min(cap, r.residual / usage.weight);
      } else {
        problem_.add_usage(r.problem_link, usage.weight);
      }
    }
    if (std::isfinite(cap)) problem_.add_usage(problem_.add_link(cap), 1.0);
    problem_.end_flow();
  }
  return true;
}

}  // namespace megasim::backend
