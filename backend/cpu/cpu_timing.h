// Timed runs of the cpu backend's kernels (cpu_kernels.h), for `megasim calibrate --backend cpu`
// and `validate --backend cpu`: what the simulator's cost model needs to predict this machine
// (DESIGN.md "Compute"): the plan's ops timed in place (SequenceTimer) and the fixed cost of one op.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/compute_cost.h"
#include "models/layer_ops.h"

namespace megasim::backend::cpu {

class CpuKernels;

struct TimingOptions {
  int repetitions = 5;      // timed runs; the median is reported
  double min_run_s = 0.02;  // each timed run repeats the kernel until it lasts at least this long
};

// Median seconds of the fixed cost of one op: a streaming kernel of 64 bytes (the call, dispatch
// and loop overhead a kernel pays whatever its size).
double time_op_overhead_s(const TimingOptions& options = {});

// A stage's compute ops timed where they run: in program order on one CpuKernels sized for all of
// them, as the executor runs them (cpu_executor.h), so that each op finds the caches the ops before
// it left (an op timed alone and repeated finds its own operands in cache: a layer's small
// memory-bound ops then run several times faster than between its GEMMs). Each op is timed on its
// own on the steady clock; the clock's cost (tens of nanoseconds) is far below the smallest op.
class SequenceTimer {
 public:
  // `sequence`: the ops in execution order (kGemm, kAttention without FlashAttention, kElementwise,
  // kNorm). Allocates the buffers (as CpuKernels does, once).
  explicit SequenceTimer(std::vector<models::LayerOp> sequence);
  ~SequenceTimer();
  SequenceTimer(const SequenceTimer&) = delete;
  SequenceTimer& operator=(const SequenceTimer&) = delete;

  [[nodiscard]] const std::vector<models::LayerOp>& sequence() const { return sequence_; }
  // Seconds of each op of the sequence (indexed like it): the median over `passes` timed passes
  // (at least 1), after one untimed pass on the first call (first touches of the buffers).
  std::vector<double> time(int passes);

 private:
  std::vector<models::LayerOp> sequence_;
  std::unique_ptr<CpuKernels> kernels_;
  bool warm_ = false;
};

}  // namespace megasim::backend::cpu
