// A Trace from the records a real backend measured on each rank (DESIGN.md "One data flow"): the
// cpu and cuda backends both gather every rank's task records and assemble them here, so their
// traces follow one convention.
#pragma once

#include <string>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend {

// `records[r]`: global rank r's records of one iteration, indexed like its stage program's tasks,
// nanoseconds from the iteration start (the ranks' clocks start together, a few microseconds apart
// at most). Returns one TraceUnit per rank (ranks = {r}, its stage and replica in Megatron's order),
// iteration_time = the last end over all ranks, and each pipeline transfer's transfer_start = the
// later of its send's and its recv's posts, clamped to its own [start, end] (a transfer can begin
// only once both sides are posted: the simulator's definition). Precondition (asserted): one record
// list per rank of the plan, each as long as the rank's stage program.
Trace measured_trace(const models::Workload& workload, std::string backend_name,
                     std::vector<std::vector<TaskRecord>> records);

}  // namespace megasim::backend
