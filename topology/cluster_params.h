// Parameters of the cluster fabric: a rail-optimised Clos of GPU servers. The defaults are
// MegaScale's (Jiang et al., NSDI'24 §3.4 and ../shared/calibration/megascale_setup.md):
// 64-port 400 Gb/s switches (Tomahawk 4 class), 1:1 at every tier, ToR downlinks split 2x200 Gb/s,
// 8 GPUs and 8x200 Gb/s NICs per server on 8 rails, 64 servers per rail-ToR group, NVSwitch inside
// a server with A100 NVLink (600 GB/s bidirectional, 300 GB/s each way).
//
// Shape (derived, see Topology): a ToR has radix/2 physical down ports, each split into
// tor_downlink_split links to NICs, and radix/2 / tor_oversubscription uplinks, one to each
// aggregation switch of its pod. An aggregation switch has agg_radix/2 down ports (one per ToR of
// its pod; agg_radix = agg_switch_radix, or switch_radix when that is 0) and agg_radix/2 /
// agg_oversubscription uplinks, one to each core switch of its plane. Core switch (plane i, j), of
// switch_radix ports, links to aggregation switch i of every pod. A larger aggregation radix builds
// larger pods: Llama 3's 3,072-GPU pods of 192 ToRs (Dubey et al. 2024, §3.3.1) are aggregation
// switches of 384 ports (192 down) above ToRs of 32 (16 GPUs down, 16 up). GPU k of a server has its NIC on rail
// k % rails; a rail-ToR group is `rails` ToRs serving the same servers_per_group servers.
#pragma once

#include <cstdint>

#include "sim/time.h"

namespace megasim::topo {

struct ClusterParams {
  std::int64_t gpus = 1024;           // total GPUs in the cluster; a multiple of gpus_per_server
  int gpus_per_server = 8;            // GPUs behind one NVSwitch, one NIC each
  int rails = 8;                      // distinct rail ToRs per group; divides gpus_per_server
  double nic_gbps = 200;              // NIC port speed, Gb/s each way
  double nvlink_gbytes_per_s = 300;   // NVLink bandwidth per GPU, GB/s each way
  int switch_radix = 64;              // ports per switch (even): ToRs and cores
  int agg_switch_radix = 0;           // ports per aggregation switch (even); 0: switch_radix
  double switch_port_gbps = 400;      // switch port speed, Gb/s each way
  int tor_downlink_split = 2;         // NIC links per ToR down port (breakout cables)
  int servers_per_group = 64;         // servers under one rail-ToR group
  double tor_oversubscription = 1.0;  // ToR downlink bandwidth / uplink bandwidth (>= 1)
  double agg_oversubscription = 1.0;  // aggregation downlink bandwidth / uplink bandwidth (>= 1)
  int tiers = 0;                      // 0: automatic (2 when one pod suffices, else 3); or 2, 3
  // Each rail its own two-tier network (DeepSeek's multi-plane fat tree): its aggregation switches
  // (spines) serve that rail's ToRs only, so no switch joins two rails, and a transfer between GPUs
  // of different rails on different servers first crosses NVLink to the source server's GPU on the
  // destination's rail (NCCL's PXN, DeepEP's forwarding). A spine's agg_radix/2 down ports then reach
  // that many rail-ToR groups; the cluster must fit in one such leaf-spine per rail.
  bool rail_planes = false;
  sim::SimTime link_latency_ns = 600;    // one switch hop plus cable, per network link
  sim::SimTime nvlink_latency_ns = 300;  // GPU to NVSwitch, per NVLink hop

  // Equal parameters build equal topologies (Topology::build is a pure function of them).
  friend bool operator==(const ClusterParams&, const ClusterParams&) = default;
};

// The aggregation switches' radix in effect: agg_switch_radix, or switch_radix when it is 0.
[[nodiscard]] inline int agg_radix(const ClusterParams& p) {
  return p.agg_switch_radix != 0 ? p.agg_switch_radix : p.switch_radix;
}

// Throws sim::ConfigError naming the key ("cluster.<name>"), the value and the valid range when a
// parameter is out of range or the parameters do not describe a buildable Clos. Beyond the ranges
// noted above: switch_radix and agg_switch_radix <= 1024 and tor_downlink_split <= 64; rails
// divides agg_radix/2 (a pod's agg_radix/2 ToRs are whole rail groups; not with rail_planes, whose
// pod is agg_radix/2 groups of every rail, one pod and two tiers); servers_per_group x gpus_per_server/rails <=
// switch_radix/2 x tor_downlink_split (a ToR's NIC links); nic_gbps <= switch_port_gbps /
// tor_downlink_split; (switch_radix/2) / tor_oversubscription and (agg_radix/2) /
// agg_oversubscription are whole numbers of uplinks; tiers = 2
// only when one pod holds all servers; and gpus <= radix pods x (radix/2 / rails) groups x
// servers_per_group x gpus_per_server (a core has one port per pod: 131072 with the defaults),
// and <= 2^24 - 2 (NIC addresses in 10.0.0.0/8).
void validate(const ClusterParams& params);

}  // namespace megasim::topo
