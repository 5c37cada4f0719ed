// The independent checker of a max-min allocation: it verifies the defining properties (feasible,
// every flow bottlenecked) without re-running progressive filling.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/sim/max_min.h"

namespace megasim::backend {

namespace {

struct LinkTotals {
  std::vector<double> load;      // sum of weight x rate
  std::vector<double> max_rate;  // highest rate of a flow crossing the link
};

LinkTotals link_totals(const MaxMinProblem& problem, std::span<const double> rates) {
  LinkTotals totals{std::vector<double>(problem.num_links(), 0.0), std::vector<double>(problem.num_links(), 0.0)};
  for (std::size_t f = 0; f < problem.num_flows(); ++f) {
    for (const MaxMinEntry& e : problem.usages(f)) {
      totals.load[e.link] += e.weight * rates[f];
      totals.max_rate[e.link] = std::max(totals.max_rate[e.link], rates[f]);
    }
  }
  return totals;
}

}  // namespace

std::string check_max_min(const MaxMinProblem& problem, std::span<const double> rates, double tolerance) {
  if (rates.size() != problem.num_flows()) {
    return fmt::format("{} rates for {} flows", rates.size(), problem.num_flows());
  }
  for (std::size_t f = 0; f < rates.size(); ++f) {
    if (!(rates[f] >= 0) || !std::isfinite(rates[f])) return fmt::format("flow {}: invalid rate {}", f, rates[f]);
  }
  // Absolute slack of `tolerance` bytes/s: only matters for links whose capacity is (near) zero.
  const double slack = tolerance;
  const LinkTotals totals = link_totals(problem, rates);
  for (std::size_t l = 0; l < problem.num_links(); ++l) {
    const double cap = problem.capacities[l];
    if (totals.load[l] > cap * (1 + tolerance) + slack) {
      return fmt::format("link {}: load {} exceeds capacity {}", l, totals.load[l], cap);
    }
  }
  for (std::size_t f = 0; f < problem.num_flows(); ++f) {
    const bool bottlenecked = std::ranges::any_of(problem.usages(f), [&](const MaxMinEntry& e) {
      const bool saturated = totals.load[e.link] >= problem.capacities[e.link] * (1 - tolerance) - slack;
      return saturated && rates[f] >= totals.max_rate[e.link] * (1 - tolerance) - slack;
    });
    if (!bottlenecked) {
      return fmt::format("flow {} (rate {}): no saturated link on which it has the highest rate", f, rates[f]);
    }
  }
  return {};
}

}  // namespace megasim::backend
