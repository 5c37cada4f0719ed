// Exact shortcuts that spare the re-solve of a whole connected component, which dominates large
// runs. Both rest on the bottleneck characterisation of max-min fairness (Bertsekas & Gallager,
// "Data Networks" §6.5.2): an allocation is max-min fair iff every flow has a saturated link on which
// no flow has a higher rate; and it is unique.
//
// Completions. Removing a flow only adds spare capacity on its own
// links. If every other flow crossing those links still has a bottleneck elsewhere (a saturated
// link outside them on which no flow has a higher rate), the current rates remain the max-min fair
// allocation of the remaining flows: each flow keeps a saturated link where it has the largest rate
// (Bertsekas & Gallager's bottleneck characterisation), and max-min allocations are unique. The
// re-solve of the whole connected component, which dominates large runs, is then skipped.
#include <algorithm>
#include <limits>

#include "backend/sim/fabric_impl.h"

namespace megasim::backend {
// Whether link l (not among the removed flow's links) is a bottleneck of the flow in `slot`.
bool Fabric::Impl::is_bottleneck_of(topo::LinkId l, std::uint32_t slot) const {
  const double limit = flows[slot].rate * (1 + kRateTolerance);
  double load = 0;
  for (const LinkFlowEntry& e : link_flows[l.index()]) {
    if (e.rate > limit) return false;
    load += e.weight * e.rate;
  }
  return load >= links[l.index()].capacity() * (1 - kRateTolerance);
}

// The pair group's links bind `slot` (one of its two flows): they are saturated, r_a + r_b at the
// smallest cap, and neither flow is faster. False for a group that ended or is another pair's now.
bool Fabric::Impl::is_pair_bottleneck_of(std::int32_t pair, std::uint32_t slot) const {
  const PairGroup& g = pair_groups[static_cast<std::size_t>(pair)];
  if (!g.active || (g.a != slot && g.b != slot)) return false;
  const double limit = flows[slot].rate * (1 + kRateTolerance);
  const double ra = flows[g.a].rate;
  const double rb = flows[g.b].rate;
  if (ra > limit || rb > limit) return false;
  return ra + rb >= g.caps.min() * (1 - kRateTolerance);
}

bool Fabric::Impl::removal_keeps_rates(std::uint32_t slot) {
  if (recompute_pending) return false;  // rates are about to change anyway: they are not current
  const FlowState& f = flows[slot];
  if (++removal_epoch == 0) {  // wrapped: clear the stamps so none matches by accident
    std::fill(removal_link_mark.begin(), removal_link_mark.end(), 0);
    std::fill(removal_flow_mark.begin(), removal_flow_mark.end(), 0);
    removal_epoch = 1;
  }
  removal_link_mark.resize(links.size(), 0);
  removal_flow_mark.resize(flows.size(), 0);
  for (const Usage& u : f.usages) removal_link_mark[u.link.index()] = removal_epoch;
  removal_flow_mark[slot] = removal_epoch;
  for (const Usage& u : f.usages) {
    for (const LinkFlowEntry& e : link_flows[u.link.index()]) {
      if (removal_flow_mark[e.slot] == removal_epoch) continue;
      removal_flow_mark[e.slot] = removal_epoch;
      if (e.rate <= 0) return false;  // stalled flows are left to the full solve
      FlowState& g = flows[e.slot];
      const auto elsewhere = [&](topo::LinkId l) {
        return removal_link_mark[l.index()] != removal_epoch && is_bottleneck_of(l, e.slot);
      };
      // A pair group of g without f crosses none of f's links.
      const auto pair_elsewhere = [&](std::int32_t pair) {
        const PairGroup& p = pair_groups[static_cast<std::size_t>(pair)];
        return p.a != slot && p.b != slot && is_pair_bottleneck_of(pair, e.slot);
      };
      const BottleneckHint hint = g.bottleneck;
      if (hint.pair >= 0 ? pair_elsewhere(hint.pair) : hint.link.valid() && elsewhere(hint.link)) continue;
      const auto pair = std::find_if(g.pairs.begin(), g.pairs.end(), [&](std::uint32_t p) {
        return static_cast<std::int32_t>(p) != hint.pair && pair_elsewhere(static_cast<std::int32_t>(p));
      });
      if (pair != g.pairs.end()) {
        g.bottleneck = {{}, static_cast<std::int32_t>(*pair)};
        continue;
      }
      const auto found = std::find_if(g.usages.begin(), g.usages.end(),
                                      [&](const Usage& gu) { return gu.link != hint.link && elsewhere(gu.link); });
      if (found == g.usages.end()) return false;
      g.bottleneck = {found->link, -1};
    }
  }
  return true;
}

// Starts. If every link of the new flow has spare capacity, giving it r = the smallest spare
// capacity over its links (divided by its weight there) saturates its tightest link and touches no
// other saturated link, so every other flow keeps its bottleneck. The new flow is bottlenecked on
// that link if no flow there has a higher rate than r; then the allocation is max-min fair as it is.
bool Fabric::Impl::admit_without_resolve(std::uint32_t slot) {
  const FlowState& f = flows[slot];
  double rate = std::numeric_limits<double>::infinity();
  topo::LinkId tightest;
  for (const Usage& u : f.usages) {
    const double capacity = links[u.link.index()].capacity();
    double load = 0;
    for (const LinkFlowEntry& e : link_flows[u.link.index()]) {
      if (e.slot == slot) continue;
      if (e.rate < 0) return false;  // not yet solved
      load += e.weight * e.rate;
    }
    const double spare = capacity - load;
    if (spare <= capacity * kRateTolerance) return false;
    if (spare / u.weight < rate) {
      rate = spare / u.weight;
      tightest = u.link;
    }
  }
  if (!tightest.valid()) return false;
  for (const LinkFlowEntry& e : link_flows[tightest.index()]) {
    if (e.slot != slot && e.rate > rate * (1 + kRateTolerance)) return false;
  }
  admitted_rate = rate;
  return true;
}

}  // namespace megasim::backend
