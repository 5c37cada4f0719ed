// Whether this machine has the memory to simulate a scenario, checked before the simulation starts
// so that a cluster too large for the machine is refused with a message naming cluster.gpus instead
// of exhausting memory (Linux overcommits: an allocation does not fail, the process is killed).
//
// The estimate is an upper bound of the iteration simulation's peak resident memory from two
// counts known before it runs: the GPUs (topology, routes, flows, per-rank state) and the task
// records (one per task per (stage, replica) unit: the trace). Measured peak RSS on the 175B
// MegaScale plan from 12,288 to 98,304 GPUs and 16 to 64 micro-batches fits 5.3 KB per GPU plus
// 44 B per task record plus a few MB (bench/README.md, "Scale limits"); the bound takes 8 KB, 64 B
// and 64 MB, and flow records (record_flows) twice the per-GPU share.
#pragma once

#include <cstdint>

#include "models/workload.h"

namespace megasim::scenarios {

struct SimulationFootprint {
  std::int64_t gpus = 0;
  std::int64_t task_records = 0;
  double bytes = 0;  // the upper bound above
};

SimulationFootprint iteration_footprint(const models::Workload& workload, std::int64_t gpus, bool record_flows);

// The memory this process may still use: the smaller of the system's available memory
// (/proc/meminfo MemAvailable, else physical memory) and the address-space and data limits
// (ulimit -v, -d) less what the process already maps.
double available_memory_bytes();

// Throws sim::ConfigError("cluster.gpus") when `simulations` concurrent simulations of this
// footprint do not fit in available_memory_bytes(), saying how much they need and is available.
void require_memory_for(const SimulationFootprint& footprint, int simulations);

}  // namespace megasim::scenarios
