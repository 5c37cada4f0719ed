// The exact shortcut for flow completions. Removing a flow only adds spare capacity on its own
// links. If every other flow crossing those links still has a bottleneck elsewhere (a saturated
// link outside them on which no flow has a higher rate), the current rates remain the max-min fair
// allocation of the remaining flows: each flow keeps a saturated link where it has the largest rate
// (Bertsekas & Gallager's bottleneck characterisation), and max-min allocations are unique. The
// re-solve of the whole connected component, which dominates large runs, is then skipped.
#include <algorithm>

#include "backend/sim/fabric_impl.h"

namespace megasim::backend {
namespace {
constexpr double kRelativeTolerance = 1e-9;
}  // namespace

// Whether link l (not among the removed flow's links) is a bottleneck of the flow in `slot`.
bool Fabric::Impl::is_bottleneck_of(topo::LinkId l, std::uint32_t slot) const {
  const double rate = flows[slot].rate;
  double load = 0;
  for (const LinkFlowEntry& e : link_flows[l.index()]) {
    const FlowState& other = flows[e.slot];
    if (other.rate > rate * (1 + kRelativeTolerance)) return false;
    load += other.usages[e.usage].weight * other.rate;
  }
  return load >= links[l.index()].capacity() * (1 - kRelativeTolerance);
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
      const FlowState& g = flows[e.slot];
      if (g.rate <= 0) return false;  // stalled flows are left to the full solve
      const bool elsewhere = std::any_of(g.usages.begin(), g.usages.end(), [&](const Usage& gu) {
        return removal_link_mark[gu.link.index()] != removal_epoch && is_bottleneck_of(gu.link, e.slot);
      });
      if (!elsewhere) return false;
    }
  }
  return true;
}

}  // namespace megasim::backend
