#include "topology/routing.h"

#include "sim/error.h"

namespace megasim::topo {
namespace {

// Up to switch_radix/2 uplinks; validate() caps the radix at 1024.
constexpr std::size_t kMaxUplinks = 512;

class CandidateBuffer {
 public:
  void push(LinkId l) { links_[size_++] = l; }
  void clear() { size_ = 0; }
  [[nodiscard]] std::span<const LinkId> view() const { return {links_.data(), size_}; }

 private:
  std::array<LinkId, kMaxUplinks> links_;
  std::size_t size_ = 0;
};

// The structure of one src -> dst transfer that leaves the source ToR.
struct Ends {
  NodeId src_tor, dst_tor;
  int src_pod, dst_pod;
};

// The last hops below an aggregation plane toward dst: the dst ToR's agg of that plane -> dst ToR is
// a member.
bool down_ok(const Topology& topo, const EcmpMembership& m, const Ends& e, int plane) {
  return m.contains(topo.agg_down_link(topo.uplink_agg(e.dst_tor, plane), e.dst_tor));
}

// Candidate uplinks of the source-pod agg `a` toward the destination pod: the uplink, the core's
// down link to the destination pod and the agg's down link to the destination ToR are members.
// Callers take the fast path (all of up_links(a)) themselves when every link is a member.
std::span<const LinkId> agg_candidates(const Topology& topo, const EcmpMembership& m, const Ends& e, NodeId a,
                                       CandidateBuffer& buf) {
  if (!down_ok(topo, m, e, topo.node(a).plane)) return {};
  for (const LinkId l : topo.up_links(a)) {
    if (m.contains(l) && m.contains(topo.core_down_link(topo.link(l).to, e.dst_pod))) buf.push(l);
  }
  return buf.view();
}

bool agg_reaches(const Topology& topo, const EcmpMembership& m, const Ends& e, NodeId a) {
  if (!down_ok(topo, m, e, topo.node(a).plane)) return false;
  for (const LinkId l : topo.up_links(a)) {
    if (m.contains(l) && m.contains(topo.core_down_link(topo.link(l).to, e.dst_pod))) return true;
  }
  return false;
}

// Candidate uplinks of the source ToR from which dst is still reachable (slow path, see above).
std::span<const LinkId> tor_candidates(const Topology& topo, const EcmpMembership& m, const Ends& e,
                                       CandidateBuffer& buf) {
  const std::span<const LinkId> ups = topo.up_links(e.src_tor);
  for (std::size_t k = 0; k < ups.size(); ++k) {
    if (!m.contains(ups[k])) continue;
    const bool ok = e.src_pod == e.dst_pod ? down_ok(topo, m, e, static_cast<int>(k))
                                           : agg_reaches(topo, m, e, topo.link(ups[k]).to);
    if (ok) buf.push(ups[k]);
  }
  return buf.view();
}

template <typename Choose>
LinkId pick(NodeId sw, std::span<const LinkId> candidates, Choose& choose) {
  const std::uint32_t i = choose(sw, candidates);
  MEGASIM_ASSERT(i < candidates.size(), "next-hop chooser returned an index out of range");
  return candidates[i];
}

// The uplink chosen at the source ToR, or at the source-pod agg `a` when given. With every link a
// member the candidates are exactly up_links(sw), and the filtering buffer is never built.
template <typename Choose>
std::optional<LinkId> choose_up(const Topology& topo, const EcmpMembership& m, const Ends& e, NodeId a,
                                Choose& choose) {
  const NodeId sw = a.valid() ? a : e.src_tor;
  if (m.all_members()) return pick(sw, topo.up_links(sw), choose);
  CandidateBuffer buf;
  const std::span<const LinkId> cands =
      a.valid() ? agg_candidates(topo, m, e, a, buf) : tor_candidates(topo, m, e, buf);
  if (cands.empty()) return std::nullopt;
  return pick(sw, cands, choose);
}

// Appends the hops after the source ToR's uplink `up` to the destination ToR; false when none.
template <typename Choose>
bool route_above_tor(const Topology& topo, const EcmpMembership& m, const Ends& e, LinkId up, Choose& choose,
                     Path& path) {
  const NodeId a = topo.link(up).to;
  if (e.src_pod == e.dst_pod) {
    path.push(topo.agg_down_link(a, e.dst_tor));
    return true;
  }
  const std::optional<LinkId> up2 = choose_up(topo, m, e, a, choose);
  if (!up2) return false;
  const NodeId core = topo.link(*up2).to;
  const LinkId core_down = topo.core_down_link(core, e.dst_pod);
  path.push(*up2);
  path.push(core_down);
  path.push(topo.agg_down_link(topo.link(core_down).to, e.dst_tor));
  return true;
}

Ends ends_of(const Topology& topo, GpuId src, GpuId dst) {
  const NodeId st = topo.tor_of(src);
  const NodeId dt = topo.tor_of(dst);
  return {st, dt, topo.node(st).pod, topo.node(dt).pod};
}

// With rail planes, a transfer to another rail first crosses NVLink to its forwarder
// (Topology::rail_forwarder); returns the GPU whose NIC sends it.
GpuId push_forwarding(const Topology& topo, GpuId src, GpuId dst, Path& path) {
  const GpuId sender = topo.rail_forwarder(src, dst);
  if (sender != src) {
    path.push(topo.nvlink_up(src));
    path.push(topo.nvlink_down(sender));
  }
  return sender;
}

template <typename Choose>
std::optional<Path> route_impl(const Topology& topo, GpuId src, GpuId dst, const EcmpMembership& m, Choose& choose) {
  MEGASIM_ASSERT(src != dst, "route needs distinct GPUs");
  Path path;
  if (topo.server_of(src) == topo.server_of(dst)) {
    path.push(topo.nvlink_up(src));
    path.push(topo.nvlink_down(dst));
    return path;
  }
  src = push_forwarding(topo, src, dst, path);
  const Ends e = ends_of(topo, src, dst);
  path.push(topo.nic_up(src));
  if (e.src_tor != e.dst_tor) {
    const std::optional<LinkId> up = choose_up(topo, m, e, NodeId(), choose);
    if (!up) return std::nullopt;
    path.push(*up);
    if (!route_above_tor(topo, m, e, *up, choose, path)) return std::nullopt;
  }
  path.push(topo.nic_down(dst));
  return path;
}

}  // namespace

void EcmpMembership::remove(LinkId l) {
  if (member_[l.index()] != 0) {
    member_[l.index()] = 0;
    ++removed_;
  }
}

void EcmpMembership::restore(LinkId l) {
  if (member_[l.index()] == 0) {
    member_[l.index()] = 1;
    --removed_;
  }
}

std::optional<Path> route(const Topology& topo, GpuId src, GpuId dst, const EcmpMembership& members,
                          const NextHopChooser& choose) {
  return route_impl(topo, src, dst, members, choose);
}

std::optional<Path> route_ecmp(const Topology& topo, GpuId src, GpuId dst, const FiveTuple& tuple,
                               const EcmpHasher& hasher, const EcmpMembership& members) {
  auto choose = [&](NodeId sw, std::span<const LinkId> cands) {
    return hasher.choose(tuple, sw, static_cast<std::uint32_t>(cands.size()));
  };
  return route_impl(topo, src, dst, members, choose);
}

std::vector<WeightedLink> spray_usage(const Topology& topo, GpuId src, GpuId dst, const EcmpMembership& members) {
  MEGASIM_ASSERT(src != dst, "spray_usage needs distinct GPUs");
  if (topo.server_of(src) == topo.server_of(dst)) return {{topo.nvlink_up(src), 1.0}, {topo.nvlink_down(dst), 1.0}};
  std::vector<WeightedLink> out;
  const GpuId sender = topo.rail_forwarder(src, dst);
  if (sender != src) out = {{topo.nvlink_up(src), 1.0}, {topo.nvlink_down(sender), 1.0}};
  src = sender;
  const Ends e = ends_of(topo, src, dst);
  out.push_back({topo.nic_up(src), 1.0});
  if (e.src_tor != e.dst_tor) {
    CandidateBuffer buf, buf2;
    const std::span<const LinkId> cands =
        members.all_members() ? topo.up_links(e.src_tor) : tor_candidates(topo, members, e, buf);
    if (cands.empty()) return {};
    out.reserve(4 + cands.size() * (2 + 2 * static_cast<std::size_t>(topo.agg_uplinks())));
    const double w = 1.0 / static_cast<double>(cands.size());
    for (const LinkId up : cands) {
      out.push_back({up, w});
      const NodeId a = topo.link(up).to;
      if (e.src_pod == e.dst_pod) {
        out.push_back({topo.agg_down_link(a, e.dst_tor), w});
        continue;
      }
      buf2.clear();
      const std::span<const LinkId> cands2 =
          members.all_members() ? topo.up_links(a) : agg_candidates(topo, members, e, a, buf2);
      MEGASIM_ASSERT(!cands2.empty(), "a ToR candidate's agg must reach the destination pod");
      const double w2 = w / static_cast<double>(cands2.size());
      for (const LinkId up2 : cands2) {
        out.push_back({up2, w2});
        out.push_back({topo.core_down_link(topo.link(up2).to, e.dst_pod), w2});
      }
      out.push_back({topo.agg_down_link(topo.uplink_agg(e.dst_tor, topo.node(a).plane), e.dst_tor), w});
    }
  }
  out.push_back({topo.nic_down(dst), 1.0});
  return out;
}

std::int64_t count_equal_cost_paths(const Topology& topo, GpuId src, GpuId dst) {
  if (src == dst || topo.server_of(src) == topo.server_of(dst)) return 1;
  const Ends e = ends_of(topo, topo.rail_forwarder(src, dst), dst);
  if (e.src_tor == e.dst_tor) return 1;
  if (e.src_pod == e.dst_pod) return topo.tor_uplinks();
  return static_cast<std::int64_t>(topo.tor_uplinks()) * topo.agg_uplinks();
}

}  // namespace megasim::topo
