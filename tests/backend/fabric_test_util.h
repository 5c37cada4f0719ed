// Small clusters and a test bed for the fabric tests. Rates used by the hand formulas:
//   NIC 200 Gb/s x 0.96 = 24e9 B/s; switch port 400 Gb/s x 0.96 = 48e9 B/s;
//   NVLink 300 GB/s x 0.8 = 240e9 B/s. Latencies: 600 ns per network link, 300 ns per NVLink hop.
#pragma once

#include <cmath>
#include <vector>

#include "backend/sim/fabric.h"
#include "sim/simulator.h"
#include "topology/topology.h"

namespace megasim::backend::testing {

inline constexpr double kNicRate = 200e9 / 8 * 0.96;
inline constexpr double kSwitchRate = 400e9 / 8 * 0.96;
inline constexpr double kNvLinkRate = 300e9 * 0.8;
inline constexpr sim::SimTime kLinkLatency = 600;
inline constexpr sim::SimTime kNvLinkLatency = 300;

// 2 GPUs per server on 2 rails, radix-8 switches: a ToR has 4 ports down split 2x (8 NICs) and 4
// uplinks (one per aggregation switch of its pod); 8 servers per rail-ToR group; 2 groups per pod.
// So ToR (group 0, rail 0) serves GPUs 0, 2, ..., 14 and ToR (group 0, rail 1) GPUs 1, 3, ..., 15.
// 32 GPUs: one pod, two tiers. 64 GPUs: two pods, three tiers (4 cores per plane).
inline topo::ClusterParams small_cluster(std::int64_t gpus) {
  topo::ClusterParams p;
  p.gpus = gpus;
  p.gpus_per_server = 2;
  p.rails = 2;
  p.switch_radix = 8;
  p.tor_downlink_split = 2;
  p.servers_per_group = 8;
  return p;
}

// Like small_cluster but every network link is 200 Gb/s (no breakout): a ToR has 4 NICs and 4
// uplinks of the NIC's speed, so two flows hashed onto one uplink each get half a NIC.
// ToR (group 0, rail 0) serves GPUs 0, 2, 4, 6 and ToR (group 0, rail 1) GPUs 1, 3, 5, 7.
inline topo::ClusterParams equal_speed_cluster(std::int64_t gpus) {
  topo::ClusterParams p = small_cluster(gpus);
  p.tor_downlink_split = 1;
  p.switch_port_gbps = 200;
  p.servers_per_group = 4;
  return p;
}

struct Bed {
  explicit Bed(const topo::ClusterParams& cluster, FabricParams params = {})
      : topo(topo::Topology::build(cluster)), fabric(sim, topo, params) {}
  sim::Simulator sim;
  topo::Topology topo;
  Fabric fabric;

  // Starts a one-lane flow; the end time of its on_complete is written to *done_at.
  FlowId start(int src, int dst, double bytes, sim::SimTime* done_at = nullptr, std::uint32_t connection = 0) {
    FlowSpec spec;
    spec.lanes.push_back({topo::GpuId(src), topo::GpuId(dst), connection});
    spec.bytes_per_lane = bytes;
    if (done_at != nullptr) {
      spec.on_complete = [this, done_at](FlowId) { *done_at = sim.now(); };
    }
    return fabric.start_flow(std::move(spec));
  }
};

// ceil(bytes / rate) in ns, the transfer time the fabric schedules for a lone flow.
inline sim::SimTime transfer_ns(double bytes, double rate) {
  return static_cast<sim::SimTime>(std::ceil(bytes / rate * 1e9));
}

// The links of `usage` of a given kind and direction.
inline std::vector<topo::LinkId> links_of_kind(const topo::Topology& topo, const std::vector<LinkUse>& usage,
                                               topo::LinkKind kind, topo::LinkDirection dir) {
  std::vector<topo::LinkId> out;
  for (const LinkUse& u : usage) {
    if (topo.link(u.link).kind == kind && topo.link(u.link).direction == dir) out.push_back(u.link);
  }
  return out;
}

}  // namespace megasim::backend::testing
