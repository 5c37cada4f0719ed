// Routes of lanes: QP numbering, ECMP / spray / adaptive path choice, and re-routing around links
// removed from the ECMP groups.
#include <cmath>
#include <span>

#include "backend/sim/fabric_impl.h"
#include "sim/error.h"
#include "sim/rng.h"

namespace megasim::backend {

std::uint32_t qp_number(std::uint64_t seed, const FlowLane& lane, int qp) {
  std::uint64_t state = seed;
  std::uint64_t h = sim::splitmix64(state);
  for (const std::uint64_t v :
       {static_cast<std::uint64_t>(static_cast<std::uint32_t>(lane.src.value)),
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(lane.dst.value)),
        static_cast<std::uint64_t>(lane.connection), static_cast<std::uint64_t>(static_cast<std::uint32_t>(qp))}) {
    state = h ^ v;
    h = sim::splitmix64(state);
  }
  return static_cast<std::uint32_t>(h & 0xFFFFFFu);
}

topo::FiveTuple qp_tuple(const topo::Topology& topo, std::uint64_t seed, const FlowLane& lane, int qp) {
  return {topo.ip_of(lane.src), topo.ip_of(lane.dst), topo::roce_source_port(qp_number(seed, lane, qp)),
          topo::kRoceV2UdpPort, topo::kUdpProtocol};
}

bool Fabric::Impl::uses_removed_link(const topo::Path& p) const {
  for (const topo::LinkId l : p.view()) {
    if (!members.contains(l)) return true;
  }
  return false;
}

// Segment loads steer adaptive routing only; other modes do not track them.
void Fabric::Impl::add_segment(const Segment& s, std::vector<Segment>& out) {
  out.push_back(s);
  if (params.routing != Routing::kAdaptive) return;
  for (const topo::LinkId l : s.path.view()) links.add_segment_weight(l, s.weight);
}

void Fabric::Impl::drop_segment_load(const Segment& s) {
  if (params.routing != Routing::kAdaptive) return;
  for (const topo::LinkId l : s.path.view()) links.drop_segment_weight(l, s.weight);
}

// The path of QP `qp` under the configured routing with the current ECMP membership, or nullopt
// when the destination is unreachable. Adaptive routing picks, at each upward hop, the candidate
// with the least load (sum of weights of the active segments on it), ties to the lowest index.
std::optional<topo::Path> Fabric::Impl::qp_path(const FlowLane& lane, int qp, const topo::EcmpMembership& m) const {
  if (params.routing == Routing::kAdaptive) {
    const topo::NextHopChooser least_loaded = [this](topo::NodeId, std::span<const topo::LinkId> candidates) {
      std::uint32_t best = 0;
      for (std::uint32_t i = 1; i < candidates.size(); ++i) {
        if (links.segment_weight(candidates[i]) < links.segment_weight(candidates[best])) best = i;
      }
      return best;
    };
    return topo::route(topo, lane.src, lane.dst, m, least_loaded);
  }
  return topo::route_ecmp(topo, lane.src, lane.dst, qp_tuple(topo, params.ecmp.seed, lane, qp), hasher, m);
}

// A path for QP `qp`, over dead links if need be (then `stuck`: it waits for a link to come back).
topo::Path Fabric::Impl::qp_path_or_fallback(const FlowLane& lane, int qp, bool& stuck) const {
  std::optional<topo::Path> p = qp_path(lane, qp, members);
  if (p && !uses_removed_link(*p)) return *p;
  stuck = true;
  if (!p) p = qp_path(lane, qp, all_links);
  MEGASIM_ASSERT(p.has_value(), "no path even with every link up");
  return *p;
}

// Appends the segments of a sprayed lane; false when spraying finds no live path. The fallback
// sprays over every link, dead or not.
bool Fabric::Impl::spray_lane(const FlowLane& lane, bool fallback, std::vector<Segment>& out) {
  const std::vector<topo::WeightedLink> split =
      topo::spray_usage(topo, lane.src, lane.dst, fallback ? all_links : members);
  if (split.empty()) return false;
  for (const topo::WeightedLink& w : split) {
    if (!fallback && !members.contains(w.link)) return false;  // a removed NIC link: no alternative
  }
  for (const topo::WeightedLink& w : split) {
    Segment s;
    s.path.push(w.link);
    s.weight = w.weight;
    add_segment(s, out);
  }
  return true;
}

LaneResult Fabric::Impl::route_lane(const FlowLane& lane, std::vector<Segment>& out) {
  LaneResult result;
  const bool same_server = topo.server_of(lane.src) == topo.server_of(lane.dst);
  if (same_server) {
    add_segment({qp_path_or_fallback(lane, 0, result.stuck), 1.0}, out);  // NVLink: no QPs, no choice
    return result;
  }
  if (params.routing == Routing::kSpray) {
    result.fluid = true;
    if (!spray_lane(lane, false, out)) {
      result.stuck = true;
      const bool sprayed = spray_lane(lane, true, out);
      MEGASIM_ASSERT(sprayed, "no path even with every link up");
    }
    return result;
  }
  const double weight = 1.0 / static_cast<double>(params.qps_per_connection);
  for (int q = 0; q < params.qps_per_connection; ++q) {
    add_segment({qp_path_or_fallback(lane, q, result.stuck), weight}, out);
  }
  return result;
}

// Re-routes the segments of `lane` that cross a link removed from the ECMP groups (resilient
// hashing: the other segments keep their paths). A segment with no live alternative keeps its old
// path; returns true when some segment is left so (stuck).
bool Fabric::Impl::reroute_lane(const FlowState& f, const LaneRoute& lane, std::vector<Segment>& out) {
  const std::span<const Segment> old(f.segments.data() + lane.first_segment, lane.segments);
  bool any_removed = false;
  for (const Segment& s : old) any_removed = any_removed || uses_removed_link(s.path);
  if (!any_removed) {
    out.insert(out.end(), old.begin(), old.end());
    return false;
  }
  if (lane.fluid) {
    for (const Segment& s : old) drop_segment_load(s);
    if (spray_lane(lane.lane, false, out)) return false;
    for (const Segment& s : old) add_segment(s, out);
    return true;
  }
  bool stuck = false;
  for (std::size_t q = 0; q < old.size(); ++q) {
    if (!uses_removed_link(old[q].path)) {
      out.push_back(old[q]);
      continue;
    }
    drop_segment_load(old[q]);  // so that adaptive routing does not see the QP's own old load
    std::optional<topo::Path> p = qp_path(lane.lane, static_cast<int>(q), members);
    if (p && !uses_removed_link(*p)) {
      add_segment({*p, old[q].weight}, out);
    } else {
      add_segment(old[q], out);
      stuck = true;
    }
  }
  return stuck;
}

// Moves the flow's segments off removed links where possible; the bytes moved so far are credited to
// the old links first.
void Fabric::Impl::reroute(std::uint32_t slot) {
  FlowState& f = flows[slot];
  settle(f);
  credit_carried(f);
  uninstall_usages(slot);
  own_route(f);
  segment_scratch.clear();
  bool stuck = false;
  for (LaneRoute& lane : f.lanes) {
    const auto first = static_cast<std::uint32_t>(segment_scratch.size());
    stuck = reroute_lane(f, lane, segment_scratch) || stuck;
    lane.first_segment = first;
    lane.segments = static_cast<std::uint32_t>(segment_scratch.size()) - first;
  }
  f.segments.swap(segment_scratch);
  f.latency = -1;
  f.bottleneck = {};
  f.stuck = stuck;
  install_usages(slot);
  request_recompute();
}

}  // namespace megasim::backend
