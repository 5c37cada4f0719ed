#include "backend/sim/max_min.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/error.h"

namespace megasim::backend {

void MaxMinProblem::clear() {
  capacities.clear();
  flow_begin.assign(1, 0);
  entries.clear();
}

std::uint32_t MaxMinProblem::add_link(double capacity_bytes_per_s) {
  capacities.push_back(capacity_bytes_per_s);
  return static_cast<std::uint32_t>(capacities.size() - 1);
}

void MaxMinProblem::end_flow() {
  MEGASIM_ASSERT(entries.size() > flow_begin.back(), "a max-min flow needs at least one link");
  flow_begin.push_back(static_cast<std::uint32_t>(entries.size()));
}

// Builds the link -> flows lists (counting sort) and the per-link sums over the unfrozen flows.
// A link crossed by one flow only (a NIC cable, a lightly used uplink: most links of a fabric
// component) just caps that flow: all of a flow's private links fold into one virtual link of
// capacity min(capacity / weight) and weight 1, appended after the problem's links, so the queue
// holds the shared links and one entry per flow instead of every link.
void MaxMinSolver::build_link_lists(const MaxMinProblem& problem) {
  const std::size_t links = problem.num_links();
  const std::size_t flows = problem.num_flows();
  links_.resize(links);
  for (std::size_t l = 0; l < links; ++l) {
    const double c = problem.capacities[l];
    MEGASIM_ASSERT(c >= 0 && std::isfinite(c), "link capacity must be finite and >= 0");
    links_[l] = {c, 0.0, 0, 0, false};
  }
  for (std::size_t f = 0; f < flows; ++f) {
    MEGASIM_ASSERT(problem.flow_begin[f + 1] > problem.flow_begin[f], "a max-min flow needs at least one link");
    for (const MaxMinEntry& e : problem.usages(f)) {
      MEGASIM_ASSERT(e.link < links, "max-min usage names an unknown link");
      MEGASIM_ASSERT(e.weight > 0 && std::isfinite(e.weight), "max-min weights must be finite and > 0");
      ++links_[e.link].unfrozen;
      links_[e.link].weight_sum += e.weight;
    }
  }
  virtual_of_.assign(flows, kNoLink);
  for (std::size_t f = 0; f < flows; ++f) {
    double cap = std::numeric_limits<double>::infinity();
    for (const MaxMinEntry& e : problem.usages(f)) {
      LinkState& s = links_[e.link];
      if (s.unfrozen != 1) continue;
      s.folded = true;
      s.unfrozen = 0;
      cap = std::min(cap, s.remaining / e.weight);
    }
    if (cap == std::numeric_limits<double>::infinity()) continue;
    virtual_of_[f] = static_cast<std::uint32_t>(links_.size());
    links_.push_back({cap, 1.0, 1, 0, false});
  }
  const std::size_t all_links = links_.size();
  link_begin_.resize(all_links + 1);
  std::uint32_t offset = 0;
  for (std::size_t l = 0; l < all_links; ++l) {
    link_begin_[l] = offset;
    links_[l].cursor = offset;
    offset += links_[l].unfrozen;
  }
  link_begin_[all_links] = offset;
  link_flows_.resize(offset);
  for (std::size_t f = 0; f < flows; ++f) {
    for (const MaxMinEntry& e : problem.usages(f)) {
      if (!links_[e.link].folded) link_flows_[links_[e.link].cursor++] = {static_cast<std::uint32_t>(f), e.weight};
    }
    if (virtual_of_[f] != kNoLink) link_flows_[links_[virtual_of_[f]].cursor++] = {static_cast<std::uint32_t>(f), 1.0};
  }
  frozen_.assign(flows, 0);
}

// The common rate the unfrozen flows of `link` would get if it were their bottleneck now.
double MaxMinSolver::level_of(std::uint32_t link) {
  LinkState& s = links_[link];
  if (s.weight_sum <= 0) {
    // Rounding in the running subtraction; recompute the sum exactly from the unfrozen flows. Only
    // reachable with pathological weights, so the extra pass is not a complexity concern.
    double sum = 0;
    for (std::uint32_t i = link_begin_[link]; i < link_begin_[link + 1]; ++i) {
      if (frozen_[link_flows_[i].flow] == 0) sum += link_flows_[i].weight;
    }
    s.weight_sum = std::max(sum, std::numeric_limits<double>::min());
  }
  return std::max(0.0, s.remaining) / s.weight_sum;
}

// Freezes every unfrozen flow of `link` at `level` and charges it to the other links it crosses;
// returns how many it froze.
std::size_t MaxMinSolver::freeze_link(const MaxMinProblem& problem, std::uint32_t link, double level,
                                      std::vector<double>& rates) {
  std::size_t frozen = 0;
  for (std::uint32_t i = link_begin_[link]; i < link_begin_[link + 1]; ++i) {
    const std::uint32_t f = link_flows_[i].flow;
    if (frozen_[f] != 0) continue;
    frozen_[f] = 1;
    ++frozen;
    rates[f] = level;
    for (const MaxMinEntry& e : problem.usages(f)) {
      LinkState& s = links_[e.link];
      if (s.folded) continue;
      s.remaining -= e.weight * level;
      s.weight_sum -= e.weight;
      --s.unfrozen;
    }
    if (virtual_of_[f] != kNoLink) links_[virtual_of_[f]].unfrozen = 0;
  }
  return frozen;
}

// A shared link whose fair share already reaches every one of its flows' own caps (their virtual
// links) never sets a rate: levels only rise, and each of its flows freezes at or below its cap
// before (or, on a tie, at the same level as) this link would pop; at those rates the link is
// within capacity (sum of w·r <= level·sum of w = capacity). Leaving it out of the queue spares the
// sort most uncongested switch links.
bool MaxMinSolver::never_binds(std::uint32_t link, double level) const {
  if (link_begin_[link + 1] - link_begin_[link] < 2) return false;  // a virtual or single-flow link
  for (std::uint32_t i = link_begin_[link]; i < link_begin_[link + 1]; ++i) {
    const std::uint32_t v = virtual_of_[link_flows_[i].flow];
    if (v == kNoLink || links_[v].remaining > level) return false;
  }
  return true;
}

// Links crossed by the same two flows with the same weights state the same constraint but for the
// capacity (the two NCCL channels of a ring share every NIC they cross): their levels move in step
// as flows freeze, so the one with the least capacity always pops first and the others never set a
// rate. Returns whether `link` is such a duplicate of a tighter (or equal, lower-index) link seen
// before in this solve.
bool MaxMinSolver::duplicate_pair(std::uint32_t link) {
  const std::uint32_t b = link_begin_[link];
  if (link_begin_[link + 1] - b != 2) return false;
  const LinkFlow& x = link_flows_[b];
  const LinkFlow& y = link_flows_[b + 1];
  for (std::uint32_t i = pair_head_[x.flow]; i != kNoLink; i = pairs_[i].next) {
    Pair& p = pairs_[i];
    if (p.other != y.flow || p.weight != x.weight || p.other_weight != y.weight) continue;
    if (links_[link].remaining < links_[p.link].remaining) {
      p.link = link;  // tighter: it represents the pair from now on; the looser one stays queued
      return false;
    }
    return true;
  }
  pairs_.push_back({y.flow, x.weight, y.weight, link, pair_head_[x.flow]});
  pair_head_[x.flow] = static_cast<std::uint32_t>(pairs_.size() - 1);
  return false;
}

void MaxMinSolver::solve(const MaxMinProblem& problem, std::vector<double>& rates) {
  build_link_lists(problem);
  rates.assign(problem.num_flows(), 0.0);
  queue_.clear();
  pair_head_.assign(problem.num_flows(), kNoLink);
  pairs_.clear();
  for (std::uint32_t l = 0; l < links_.size(); ++l) {
    if (links_[l].unfrozen == 0 || duplicate_pair(l)) continue;
    const double level = level_of(l);
    if (!never_binds(l, level)) queue_.append_initial({level, l});
  }
  queue_.sort_initial();
  std::size_t unfrozen_flows = problem.num_flows();
  // Levels only rise as flows freeze ((c - w*L) / (W - w) >= c / W when L <= c / W), so a popped
  // entry whose key is below the link's current level is stale: re-key it and push it back. This
  // lazy scheme pushes once per pop instead of once per update.
  while (unfrozen_flows > 0 && !queue_.empty()) {
    const LevelQueue::Entry top = queue_.pop();
    if (links_[top.link].unfrozen == 0) continue;
    const double level = level_of(top.link);
    if (level > top.level) {
      queue_.push({level, top.link});
      continue;
    }
    unfrozen_flows -= freeze_link(problem, top.link, level, rates);
  }
}

std::vector<double> solve_max_min(const MaxMinProblem& problem) {
  MaxMinSolver solver;
  std::vector<double> rates;
  solver.solve(problem, rates);
  return rates;
}

}  // namespace megasim::backend
