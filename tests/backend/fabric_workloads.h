// Random workloads through failures for the fabric's invariant tests (fabric_invariants_test.cc,
// fabric_sweep_test.cc): a run that checks max-min fairness and capacity at every recomputation,
// and the agreement of the region solve with the whole-component solve.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/sim/fabric.h"
#include "sim/time.h"

namespace megasim::backend::testing {

struct Workload {
  std::vector<FlowSpec> specs;
  std::vector<sim::SimTime> starts;
};

// 120 flows of 1-3 lanes between random GPUs of the 64-GPU three-tier cluster, started over 20 ms.
Workload random_workload(std::uint64_t seed);

// random_workload plus four rings of 16 GPUs with two channels each, the pattern of a DP
// collective: each channel is one flow whose lanes are the ring's edges, and the two channels share
// every NIC cable (paired links, fabric_sharing.cc) until a random flow joins one.
Workload ring_workload(std::uint64_t seed);

struct RunResult {
  std::vector<FlowRecord> records;
  std::vector<std::vector<LinkUse>> first_usage;
  std::vector<std::string> violations;
  double network_lane_bytes = 0;
  double cross_tor_lane_bytes = 0;
  double nic_up_carried = 0;
  double tor_up_carried = 0;
  std::uint64_t skipped = 0;  // completions that kept the rates without a re-solve
  std::uint64_t solves = 0;
  std::uint64_t region_solves = 0;
  std::uint64_t region_rounds = 0;
  std::uint64_t deepest_region_rounds = 0;
};

// Runs the workload with a ToR uplink failing for 30 ms (re-routed after 5 ms) and a NIC cable
// flapping, checking the rates after every recomputation.
RunResult run(const Workload& w, FabricParams params);

// Runs the workload with the region solve and again re-solving whole components: max-min holds at
// every change of the first, and both give the same flow completions (to the rounding of the two
// solves, far below a nanosecond per flow). Returns the region run.
RunResult expect_region_solve_exact(const Workload& w, FabricParams params, const std::string& context);

// The same with default parameters but the routing.
RunResult expect_region_solve_exact(const Workload& w, Routing routing, const std::string& context);

}  // namespace megasim::backend::testing
