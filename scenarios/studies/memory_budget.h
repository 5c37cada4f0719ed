// Whether this machine has the memory to simulate a scenario, checked before the simulation starts
// so that a cluster too large for the machine is refused with a message naming cluster.gpus instead
// of exhausting memory (Linux overcommits: an allocation does not fail, the process is killed).
//
// The estimate is an upper bound of the iteration simulation's peak resident memory from counts
// known before it runs: the GPUs (topology, routes, flows, per-rank state), the task records (one per
// task per (stage, replica) unit: the trace) and the tasks of the stage programs (the workload and
// the executor's per-task structure, which a plan with few replicas and many micro-batches makes
// the largest term). Measured peak RSS on the 175B MegaScale plan from 12,288 to 98,304 GPUs and 16
// to 64 micro-batches fits 5.3 KB per GPU plus 44 B per task record plus a few MB (bench/README.md,
// "Scale limits"); the bound takes 8 KB, 64 B and 64 MB, flow records (record_flows) twice the
// per-GPU share, and 256 B per program task. planned_footprint bounds the same before the workload
// is built, from the plan alone, so that a batch of 2^24 micro-batches is refused before it is
// allocated.
#pragma once

#include <cstdint>

#include "models/workload.h"

namespace megasim::scenarios {

struct SimulationFootprint {
  std::int64_t gpus = 0;
  std::int64_t task_records = 0;
  std::int64_t program_tasks = 0;  // summed over the stage programs
  std::int64_t global_batch = 0;   // plan.global_batch_size, named when the tasks dominate
  double bytes = 0;                // the upper bound above
};

SimulationFootprint iteration_footprint(const models::Workload& workload, std::int64_t gpus, bool record_flows);
// An upper bound of iteration_footprint(build_workload(model, plan), gpus, record_flows) from the
// plan: a stage program has 2·m·v pipeline steps (m micro-batches, v model chunks), each a compute
// with at most a send and a receive, plus two DP tasks per gradient bucket, the optimizer step and
// the embedding exchange (models/workload.h).
SimulationFootprint planned_footprint(const models::ModelSpec& model, const models::ResolvedPlan& plan,
                                      std::int64_t gpus, bool record_flows);

// The memory this process may still use: the smaller of the system's available memory
// (/proc/meminfo MemAvailable, else physical memory) and the address-space and data limits
// (ulimit -v, -d) less what the process already maps.
double available_memory_bytes();

// The most task records one simulation may have, whatever the machine: its events, and so its run
// time, grow with them (about a microsecond each), so past this a simulation would run for hours.
// 2^27 is about 36 times the largest plan this project ships or tests (MegaScale's 175B plan on
// 98,304 GPUs: 3.7 million).
inline constexpr std::int64_t kMaxTaskRecords = std::int64_t{1} << 27;

// Throws sim::ConfigError("plan.global_batch_size") when the footprint has more than
// kMaxTaskRecords task records; then, when `simulations` concurrent simulations of this footprint do not fit in
// available_memory_bytes(), saying how much they need and is available: naming cluster.gpus when
// the per-GPU share is the larger, else plan.global_batch_size (the micro-batches' tasks).
void require_memory_for(const SimulationFootprint& footprint, int simulations);

}  // namespace megasim::scenarios
