// Which of a flow's links it shares. A link crossed by one flow only (most links of a long ring
// flow: its NIC cables and ToR ports that no other transfer uses at the moment) just caps that
// flow's rate; it takes no part in how flows share bandwidth. Each flow keeps the list of its usages
// on shared links (two or more flows) and, for the others, the multiset of their caps (capacity /
// weight), so the region solve (fabric_local_solve.cc) works on shared links plus one cap per flow,
// at a cost that follows the contention rather than the flow's length. Kept exact as flows enter
// and leave links (a link turns shared at its second flow, private again at its last) and as
// capacities change.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "backend/sim/fabric_impl.h"
#include "sim/error.h"

namespace megasim::backend {

void PrivateCaps::add(double cap) {
  for (Entry& e : entries) {
    if (e.cap == cap) {
      ++e.count;
      return;
    }
  }
  entries.push_back({cap, 1});
}

void PrivateCaps::remove(double cap) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].cap != cap) continue;
    if (--entries[i].count == 0) {
      entries[i] = entries.back();
      entries.pop_back();
    }
    return;
  }
  MEGASIM_ASSERT(false, "removing a private link cap the flow does not have");
}

double PrivateCaps::min() const {
  double m = std::numeric_limits<double>::infinity();
  for (const Entry& e : entries) m = std::min(m, e.cap);
  return m;
}

double Fabric::Impl::usage_cap(const Usage& u) const {
  return links[u.link.index()].capacity() / u.weight;
}

void Fabric::Impl::mark_shared(std::uint32_t slot, std::uint32_t usage) {
  FlowState& f = flows[slot];
  Usage& u = f.usages[usage];
  if (u.shared_index >= 0) return;
  f.private_caps.remove(u.cap);
  u.shared_index = static_cast<std::int32_t>(f.shared.size());
  f.shared.push_back(usage);
}

void Fabric::Impl::mark_private(std::uint32_t slot, std::uint32_t usage) {
  FlowState& f = flows[slot];
  Usage& u = f.usages[usage];
  if (u.shared_index < 0) return;
  const auto index = static_cast<std::size_t>(u.shared_index);
  f.shared[index] = f.shared.back();
  f.shared.pop_back();
  if (index < f.shared.size()) f.usages[f.shared[index]].shared_index = static_cast<std::int32_t>(index);
  u.shared_index = -1;
  f.private_caps.add(u.cap);
}

// Around a capacity change of link l: every usage's cap on it moves with the capacity (and the
// private cap of a flow alone on it); cached routes carry caps, so they are dropped.
void Fabric::Impl::before_capacity_change(topo::LinkId l) {
  const std::vector<LinkFlowEntry>& list = link_flows[l.index()];
  if (list.size() != 1) return;
  FlowState& f = flows[list.front().slot];
  f.private_caps.remove(f.usages[list.front().usage].cap);
}

void Fabric::Impl::after_capacity_change(topo::LinkId l) {
  route_cache.clear();
  const std::vector<LinkFlowEntry>& list = link_flows[l.index()];
  for (const LinkFlowEntry& e : list) {
    Usage& u = flows[e.slot].usages[e.usage];
    u.cap = usage_cap(u);
  }
  if (list.size() == 1)
    flows[list.front().slot].private_caps.add(flows[list.front().slot].usages[list.front().usage].cap);
}

// Recounts every active flow's shared list and private caps from the link lists (tests, through
// Fabric::check_rates).
std::string Fabric::Impl::check_sharing() const {
  for (const FlowState& f : flows) {
    if (!f.active) continue;
    PrivateCaps expected;
    std::size_t shared = 0;
    for (std::size_t i = 0; i < f.usages.size(); ++i) {
      const Usage& u = f.usages[i];
      const bool alone = link_flows[u.link.index()].size() == 1;
      if (alone != (u.shared_index < 0)) {
        return fmt::format("flow {}: link {} marked {} but crossed by {} flows", f.id.value, u.link.value,
                           alone ? "shared" : "private", link_flows[u.link.index()].size());
      }
      if (u.cap != usage_cap(u)) return fmt::format("flow {}: stale cap on link {}", f.id.value, u.link.value);
      if (alone) {
        expected.add(usage_cap(u));
      } else {
        ++shared;
        if (f.shared.at(static_cast<std::size_t>(u.shared_index)) != i)
          return fmt::format("flow {}: shared list out of step", f.id.value);
      }
    }
    if (shared != f.shared.size()) return fmt::format("flow {}: shared list has stale entries", f.id.value);
    for (const PrivateCaps::Entry& e : expected.entries) {
      const auto it = std::find_if(f.private_caps.entries.begin(), f.private_caps.entries.end(),
                                   [&](const PrivateCaps::Entry& g) { return g.cap == e.cap; });
      if (it == f.private_caps.entries.end() || it->count != e.count)
        return fmt::format("flow {}: private caps out of step", f.id.value);
    }
    if (expected.entries.size() != f.private_caps.entries.size())
      return fmt::format("flow {}: private caps have stale entries", f.id.value);
  }
  return "";
}

}  // namespace megasim::backend
