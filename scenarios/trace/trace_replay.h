// Replays a recorded iteration (a backend::Trace, simulated or measured) with other compute times:
// the basis of the what-if analysis on a trace (trace_whatif.h), which therefore works on data from
// a real run, not only on the simulator's own inputs.
//
// Model (models/workload.h's stream semantics, with every communication time as recorded):
//  - compute tasks run one at a time in program order on their stream, after their deps, for the
//    given duration;
//  - PP sends and recvs are posted in program order on the pp stream once their deps are met; a
//    transfer begins at the later of the send's and the recv's posts (the peer is the unit of the
//    peer stage with the same replica and TP rank) and lasts what it lasted in the trace; both
//    sides end with it;
//  - DP collectives run one at a time in program order on the dp stream; the k-th of a stage
//    begins when every unit of its data-parallel group (same stage, same TP rank) has issued it and
//    lasts what it lasted.
//  What a transfer lasted: the longest over its sides of end - max(transfer_start, the last
//  recorded post or issue of any side). The simulator's transfer_start is that instant already; a
//  real backend records a DP call's transfer_start at its own issue (measured_trace.h), so the wait
//  for the last replica is taken out rather than replayed as transfer time.
// Both unit layouts work: the simulator's one unit per (stage, replica) TP group (ranks.size() > 1
// or tp = 1) and a real backend's one unit per rank (measured_trace.h); a one-rank unit's TP rank is
// rank % tp. Replaying a trace with its own compute durations reproduces its times exactly when the
// trace follows the model (the simulator's traces do, GC pauses included in the durations).
#pragma once

#include <memory>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "sim/time.h"

namespace megasim::scenarios {

// Per unit (Trace::units index), per task of its stage program: the compute duration in ns
// (end - start for compute tasks, 0 for communication tasks).
using ComputeDurations = std::vector<std::vector<sim::SimTime>>;

// The recorded compute durations of a trace.
ComputeDurations compute_durations(const models::Workload& workload, const backend::Trace& trace);

// The trace replayed with `durations` (shaped like compute_durations' result; entries of
// communication tasks are ignored, compute entries must be >= 0). The result has the same units in
// the same order, records with the replayed times (tp_exposed as recorded, at most the new
// duration), iteration_time = the last end, no flows. Throws sim::ConfigError with key "trace" when
// the trace does not cover the plan (every rank once, records matching the stage programs) or a
// transfer's peer or a DP group member is missing, and "trace.durations" for a wrongly shaped or
// negative duration.
backend::Trace replay_trace(const models::Workload& workload, const backend::Trace& trace,
                            const ComputeDurations& durations);

// The same replay with the timing graph built once, for the what-ifs (trace_whatif.h), which replay
// one trace with several sets of durations: each replay is then one pass over the graph (about 4 M
// nodes at 12,288 GPUs). `workload` and `trace` must outlive it.
class TraceReplay {
 public:
  // Throws sim::ConfigError "trace" as replay_trace.
  TraceReplay(const models::Workload& workload, const backend::Trace& trace);
  ~TraceReplay();
  TraceReplay(const TraceReplay&) = delete;
  TraceReplay& operator=(const TraceReplay&) = delete;

  // replay_trace(workload, trace, durations); throws "trace.durations" as it.
  [[nodiscard]] backend::Trace replay(const ComputeDurations& durations) const;
  // Its iteration_time alone, without the records.
  [[nodiscard]] sim::SimTime iteration_time(const ComputeDurations& durations) const;

 private:
  struct Impl;
  [[nodiscard]] std::vector<sim::SimTime> solve(const ComputeDurations& durations) const;

  const models::Workload& workload_;
  const backend::Trace& trace_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace megasim::scenarios
