// Timed runs of the cpu backend's kernels (cpu_kernels.h), for `megasim calibrate --backend cpu`:
// what the simulator's cost model needs to predict this machine (DESIGN.md "Compute").
#pragma once

#include <cstdint>

#include "models/compute_cost.h"

namespace megasim::backend::cpu {

struct TimingOptions {
  int repetitions = 5;      // timed runs; the median is reported
  double min_run_s = 0.02;  // each timed run repeats the kernel until it lasts at least this long
};

// Median seconds of one (batched) float32 GEMM of this shape, as CpuKernels runs it.
double time_gemm_s(const models::GemmShape& shape, const TimingOptions& options = {});
// Median seconds of one streaming kernel that moves `bytes` (read + write) as CpuKernels runs it.
double time_memory_op_s(double bytes, const TimingOptions& options = {});
// Median seconds of the fixed cost of one op: a streaming kernel of 64 bytes (the call, dispatch
// and loop overhead a kernel pays whatever its size).
double time_op_overhead_s(const TimingOptions& options = {});

}  // namespace megasim::backend::cpu
