// What a scenario sets of the flow-level fabric (backend/sim/fabric.h): routing, ECMP hashing, queue
// pairs, link efficiencies, failure detection and the stall timeout. Kept apart from the Fabric so
// that the configuration layers can hold it without the fabric's machinery.
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/time.h"
#include "topology/ecmp.h"

namespace megasim::backend {

enum class Routing : std::uint8_t {
  kEcmp,      // hash the 5-tuple of each QP at every upward hop (topology/ecmp.h)
  kSpray,     // per-packet spraying as a fluid split over all equal-cost paths
  kAdaptive,  // at flow start, each upward hop picks the least-loaded candidate link
};
std::string_view to_string(Routing r);
// Parses "ecmp", "spray" or "adaptive"; throws sim::ConfigError naming `key` otherwise.
Routing parse_routing(std::string_view text, std::string_view key);

struct FabricParams {
  Routing routing = Routing::kEcmp;
  topo::EcmpConfig ecmp;       // hash function, polarization, seed
  int qps_per_connection = 1;  // NCCL_IB_QPS_PER_CONNECTION
  // Achievable fraction of a link's nominal rate for collective traffic (protocol overhead).
  // NVLink: nccl-tests all-reduce busbw 230 of 300 GB/s on A100, 370 of 450 on H100 (~0.8).
  // Network: about 24 of 25 GB/s per 200 Gb/s NIC (NVIDIA/nccl issue 812).
  double nvlink_efficiency = 0.8;
  double network_efficiency = 0.96;
  // Time from a link going down to its removal from the ECMP groups (flows on it stall until then).
  sim::SimTime failure_detection_ns = 50 * sim::kMillisecond;
  // A flow that makes no progress for this long fails the job (NCCL timeout); 0 disables the check.
  sim::SimTime stall_timeout_ns = 0;
  // Re-solve only the region around a change, checked exact (fabric_local_solve.cc); false always
  // re-solves the whole connected component (the reference the tests compare against).
  bool region_solve = true;
  // Rounds a region solve grows before it weighs going on against re-solving the component (it then
  // gives up once its rounds have solved more usages than the last component solve did). A tuning
  // of the solve's cost, not of its result; the tests lower it to exercise both ways.
  int region_patience_rounds = 8;
  // Keep a FlowRecord per completed flow (completed_flows()); false keeps only their count, which
  // saves tens of MB on a large iteration whose trace does not list flows.
  bool keep_flow_records = true;
};
// Throws sim::ConfigError("fabric.<key>", ...) for out-of-range values.
void validate(const FabricParams& params);

}  // namespace megasim::backend
