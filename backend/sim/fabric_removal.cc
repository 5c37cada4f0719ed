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
#include <cmath>

#include "backend/sim/fabric_impl.h"

namespace megasim::backend {

// Whether the flow in `slot` has a bottleneck that `leaving` does not cross: a link it crosses alone
// where it runs at its cap, one of its pair groups without `leaving`, or a shared link without it.
bool Fabric::Impl::has_bottleneck_without(std::uint32_t slot, std::uint32_t leaving) {
  return sharing.find_bottleneck(
      slot,
      [&](std::uint32_t pair) {
        const PairGroup& p = sharing.pair(pair);
        return p.a != leaving && p.b != leaving && sharing.is_pair_bottleneck_of(static_cast<std::int32_t>(pair), slot);
      },
      [&](topo::LinkId l) { return sharing.is_bottleneck_of(l, slot, leaving); });
}

// The flows that share a link with the leaving flow are those on its shared links and its pair
// partners; each must keep a bottleneck among the links the leaving flow does not cross.
bool Fabric::Impl::removal_keeps_rates(std::uint32_t slot) {
  if (recompute_pending) return false;  // rates are about to change anyway: they are not current
  const FlowState& f = flows[slot];
  if (f.shared.empty() && f.pairs.empty()) return true;  // it shares no link
  removal_seen.clear(flows.slots());
  removal_seen.insert(slot);
  // The lists of its shared links, then its neighbours' records, load together (each a miss at scale).
  for (const SharedUsage& k : f.shared) sharing.prefetch_list(k.link);
  for (const std::uint32_t pair : f.pairs) __builtin_prefetch(&flows[sharing.pair(pair).partner(slot)]);
  for (const SharedUsage& k : f.shared) {
    for (const LinkFlowEntry& e : sharing.flows_on(k.link)) __builtin_prefetch(&flows[e.slot]);
  }
  const auto keeps = [&](std::uint32_t neighbour) {
    if (!removal_seen.insert_new(neighbour)) return true;
    if (flows[neighbour].rate <= 0) return false;  // stalled flows are left to the full solve
    return has_bottleneck_without(neighbour, slot);
  };
  for (const std::uint32_t pair : f.pairs) {
    if (!keeps(sharing.pair(pair).partner(slot))) return false;
  }
  for (const SharedUsage& k : f.shared) {
    for (const LinkFlowEntry& e : sharing.flows_on(k.link)) {
      if (!keeps(e.slot)) return false;
    }
  }
  return true;
}

// Starts. If every link of the new flow has spare capacity, giving it r = the smallest spare
// capacity over its links (divided by its weight there) saturates its tightest link and touches no
// other saturated link, so every other flow keeps its bottleneck. The new flow is bottlenecked on
// that link if no flow there has a higher rate than r; then the allocation is max-min fair as it is.
// Links it crosses alone have their whole capacity spare (the smallest of their caps bounds r, and
// nobody there is faster); on a pair group's links the spare is cap - the partner's rate.
bool Fabric::Impl::admit_without_resolve(std::uint32_t slot) {
  const FlowState& f = flows[slot];
  double rate = f.private_caps.min();
  if (!(rate > 0)) return false;  // a dead link
  BottleneckHint tightest;        // none: a link it crosses alone
  for (const std::uint32_t pair : f.pairs) {
    const PairGroup& g = sharing.pair(pair);
    const double partner_rate = flows[g.partner(slot)].rate;
    if (partner_rate < 0) return false;  // not yet solved
    const double cap = g.caps.min();
    if (cap - partner_rate <= cap * kRateTolerance) return false;
    if (cap - partner_rate < rate) {
      rate = cap - partner_rate;
      tightest = {-1, static_cast<std::int32_t>(pair)};
    }
  }
  for (const SharedUsage& u : f.shared) {
    const double capacity = links.capacity(u.link);
    double load = 0;
    for (const LinkFlowEntry& e : sharing.flows_on(u.link)) {
      if (e.slot == slot) continue;
      if (e.rate < 0) return false;  // not yet solved
      load += e.weight * e.rate;
    }
    const double spare = capacity - load;
    if (spare <= capacity * kRateTolerance) return false;
    if (spare / u.weight < rate) {
      rate = spare / u.weight;
      tightest = {static_cast<std::int32_t>(u.usage), -1};
    }
  }
  if (!std::isfinite(rate)) return false;  // crosses no link: left to the solve
  const double limit = rate * (1 + kRateTolerance);
  if (tightest.pair >= 0) {
    if (flows[sharing.pair(static_cast<std::size_t>(tightest.pair)).partner(slot)].rate > limit) return false;
  } else if (tightest.usage >= 0) {
    for (const LinkFlowEntry& e : sharing.flows_on(f.usages[static_cast<std::size_t>(tightest.usage)].link)) {
      if (e.slot != slot && e.rate > limit) return false;
    }
  }
  admitted_rate = rate;
  return true;
}

}  // namespace megasim::backend
