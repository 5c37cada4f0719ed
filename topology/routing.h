// Paths through the Clos. A path is the sequence of directed links a transfer crosses:
//   same server:        GPU -nvlink-> NVSwitch -nvlink-> GPU
//   same rail ToR:      NIC -> ToR -> NIC
//   same pod:           NIC -> ToR -> agg -> ToR -> NIC                (choice at the ToR)
//   across pods:        NIC -> ToR -> agg -> core -> agg -> ToR -> NIC  (choices at ToR and agg)
// The only choices are the upward hops; the way down is fixed by the destination. A next hop is a
// candidate when its link is a member of the ECMP group (not removed after a failure) and the
// destination is still reachable through it, as a routing protocol would advertise.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "topology/ecmp.h"
#include "topology/ids.h"
#include "topology/topology.h"

namespace megasim::topo {

inline constexpr int kMaxPathLinks = 6;

struct Path {
  std::array<LinkId, kMaxPathLinks> links{};
  std::uint8_t size = 0;
  [[nodiscard]] std::span<const LinkId> view() const { return {links.data(), size}; }
  void push(LinkId l) { links[size++] = l; }
  friend bool operator==(const Path& a, const Path& b) {
    return a.size == b.size && std::equal(a.links.begin(), a.links.begin() + a.size, b.links.begin());
  }
};

// Which links are members of their ECMP groups. Every link starts as a member; the fabric removes a
// failed link after its detection delay and restores it when it comes back.
class EcmpMembership {
 public:
  explicit EcmpMembership(std::size_t num_links) : member_(num_links, 1) {}
  [[nodiscard]] bool contains(LinkId l) const { return member_[l.index()] != 0; }
  void remove(LinkId l);
  void restore(LinkId l);
  [[nodiscard]] bool all_members() const { return removed_ == 0; }

 private:
  std::vector<std::uint8_t> member_;
  std::size_t removed_ = 0;
};

// Chooses among the candidate next-hop links at an upward hop of `switch_node`; returns an index
// into `candidates` (never empty).
using NextHopChooser = std::function<std::uint32_t(NodeId switch_node, std::span<const LinkId> candidates)>;

// The path from src to dst (src != dst), or nullopt when an upward choice has no candidate left.
// With rail planes a transfer to another rail's GPU on another server starts with the NVLink hops to
// its forwarder (Topology::rail_forwarder), whose NIC sends it: at most 6 links either way.
std::optional<Path> route(const Topology& topo, GpuId src, GpuId dst, const EcmpMembership& members,
                          const NextHopChooser& choose);

// ECMP: each upward hop picks hasher.choose(tuple, switch, #candidates).
std::optional<Path> route_ecmp(const Topology& topo, GpuId src, GpuId dst, const FiveTuple& tuple,
                               const EcmpHasher& hasher, const EcmpMembership& members);

// Per-packet spraying as a fluid: at every upward hop the bytes split equally over the candidates.
// Returns each link's fraction of the transfer (fractions on each tier sum to 1); empty when dst is
// unreachable.
struct WeightedLink {
  LinkId link;
  double weight;
};
std::vector<WeightedLink> spray_usage(const Topology& topo, GpuId src, GpuId dst, const EcmpMembership& members);

// Number of distinct equal-cost paths from src to dst with every link a member.
std::int64_t count_equal_cost_paths(const Topology& topo, GpuId src, GpuId dst);

}  // namespace megasim::topo
