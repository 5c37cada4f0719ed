// What a backend returns: when each task of the workload ran on each rank (DESIGN.md "One data
// flow"). The simulator and the real backends fill the same type, so reports, Perfetto traces and
// predicted-vs-measured comparisons are one piece of code for all of them.
//
// Ranks whose timelines are identical by construction (the simulator plays a tensor-parallel group
// as one unit: its ranks run the same kernels at the same times on their own GPUs) share one
// TraceUnit; a real backend writes one unit per rank. Times are nanoseconds from the iteration start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/time.h"

namespace megasim::backend {

// A task's times; a unit's records are indexed like its stage program's tasks. 32 bytes: the
// executor writes one at every start and end of the iteration's millions of tasks.
struct TaskRecord {
  sim::SimTime start = 0;           // compute: started; p2p and collectives: posted or issued
  sim::SimTime transfer_start = 0;  // p2p and collectives: data began to move (= start for compute)
  sim::SimTime end = 0;
  // Compute tasks: the part of [start, end) spent in tensor-parallel collectives that no GEMM hid
  // (0 when there are none or they are fully overlapped).
  sim::SimTime tp_exposed = 0;
};

struct TraceUnit {
  std::vector<std::int64_t> ranks;  // global ranks sharing this timeline (at least one)
  std::int32_t stage = 0;           // pipeline stage (selects the StageProgram)
  std::int32_t replica = 0;         // data-parallel replica
  std::vector<TaskRecord> records;  // one per task of the stage program, in program order (same index)
};

// One transfer on the fabric, for flow-level analysis (ECMP collisions, link hot spots).
struct FlowTraceRecord {
  sim::SimTime start = 0;
  sim::SimTime end = 0;
  double bytes_per_lane = 0;
  std::int32_t lanes = 0;
  std::string label;  // "pp fwd stage 3 -> 4", "dp reduce_scatter stage 2", ...
};

struct Trace {
  std::string backend;              // "sim", "cpu", "cuda"
  sim::SimTime iteration_time = 0;  // end of the last task on any rank
  // Every rank in one unit or another; except a simulation with IterationInputs::one_replica, whose
  // units are replica 0's, one per stage, standing for every replica.
  std::vector<TraceUnit> units;
  std::vector<FlowTraceRecord> flows;  // may be empty (real backends, or when not requested)
};

}  // namespace megasim::backend
