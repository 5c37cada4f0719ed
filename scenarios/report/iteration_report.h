// The report of one simulated (or measured) training iteration: time, tokens/s, MFU/HFU, where each
// rank's time went, the DP replica x PP stage heat map and the critical path. Built from a Workload
// and the Trace a backend returned for it (DESIGN.md "One data flow"), so it reads the simulator and
// the real backends alike.
//
// Breakdown: each unit's compute-stream timeline [0, iteration_time) is cut into disjoint pieces,
// so its categories (RankBreakdown) sum to the iteration time. An idle gap is blamed on the
// dependency that blocked it (the one in `deps` that ended last); pipeline idle is bubble up to the
// schedule's own share, (p-1)/(v*m) of the unit's forward and backward time (Narayanan et al. 2021),
// and waiting beyond it. The rules, and why a share rather than the schedule's warm-up and
// cool-down: docs/design/iteration_report.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/trace.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/report/provenance.h"
#include "scenarios/report/sample_report.h"
#include "scenarios/report/straggler_report.h"
#include "sim/time.h"

namespace megasim::scenarios {

// Seconds of a unit's compute-stream timeline; the six categories sum to total_s.
struct RankBreakdown {
  double compute_s = 0;
  double tp_exposed_s = 0;
  double pp_exposed_s = 0;
  double dp_exposed_s = 0;
  double bubble_s = 0;
  double waiting_s = 0;
  double total_s = 0;  // = the iteration time
};

// Per (DP replica x PP stage) compute time, flat row-major: index = replica * pp + stage.
struct HeatMap {
  std::int64_t dp = 0;
  std::int64_t pp = 0;
  // compute + tp_exposed of the cell's unit (the slowest one when a real backend writes one unit
  // per rank); 0 for a cell no unit covers.
  std::vector<double> compute_s;
  // compute_s / the mean compute_s of the covered cells of the same stage (1 = average; 0 when
  // uncovered).
  std::vector<double> slowdown;
};

struct IterationReport {
  std::string backend;  // Trace::backend
  std::string gpu;      // GpuSpec::name
  double iteration_time_s = 0;
  double tokens_per_s = 0;  // global_batch_size * seq_length / iteration time
  double mfu = 0;           // model_flops / (time * world_size * peak bf16 dense)
  double hfu = 0;           // hardware_flops, same denominator
  std::string flop_convention;
  // MFU as MegaScale counts it: model_flops_full_attention, same denominator; = mfu without a
  // sliding window, larger by the ratio of the two FLOP counts with one.
  double mfu_full_attention = 0;
  std::string full_attention_flop_convention;
  RankBreakdown mean;      // over units, weighted by their number of ranks
  RankBreakdown critical;  // the unit whose compute stream finishes last (the first one on a tie)
  std::int64_t critical_stage = 0;
  std::int64_t critical_replica = 0;
  std::optional<models::MemoryEstimate> memory;  // not computed by summarize(): the caller fills it
  models::ResolvedPlan plan;
  HeatMap heat_map;
  // The chain of tasks ending the iteration (see critical_chain), in time order, one line per run
  // of consecutive tasks on the same unit: "stage 1 replica 0: F mb0 c0 .. B mb1 c0 (5 tasks,
  // 1.000 to 7.000 ms)".
  std::vector<std::string> critical_path;
  // The straggler analysis (straggler_report.h); only when the scenario has active stragglers.
  std::optional<StragglerReport> stragglers;
  // The spread over independent samples (sample_report.h); only with `run --samples N`.
  std::optional<SampleReport> samples;
  // Where the report came from (provenance.h); not computed by summarize(): the study fills it.
  std::optional<Provenance> provenance;
};

// A task of one unit: Trace::units[unit].records[task].
struct TaskRef {
  std::size_t unit = 0;
  std::int32_t task = 0;
  friend bool operator==(const TaskRef&, const TaskRef&) = default;
};

// Preconditions (asserted): every unit's stage is a stage of the workload and its records match
// the stage program one to one; iteration_time > 0.
IterationReport summarize(const models::Workload& workload, const backend::Trace& trace, const models::GpuSpec& gpu);
// summarize's headline alone: backend, GPU, plan, iteration time, tokens/s, MFU, HFU and the mean
// breakdown (critical unit, heat map and critical path left empty). It reads each unit as standing
// for its ranks, so it also summarises a one-replica trace (backend::IterationInputs::one_replica),
// whose units stand for every replica of their stage: all stages have equal weight either way.
IterationReport summarize_throughput(const models::Workload& workload, const backend::Trace& trace,
                                     const models::GpuSpec& gpu);

// The breakdown of every unit, index = Trace::units index (the rule at the top of this file).
std::vector<RankBreakdown> breakdown_by_unit(const models::Workload& workload, const backend::Trace& trace);

// End of each unit's last compute task (0 when it has none), index = Trace::units index.
std::vector<sim::SimTime> compute_stream_ends(const models::Workload& workload, const backend::Trace& trace);

HeatMap heat_map(const models::Workload& workload, const backend::Trace& trace,
                 const std::vector<RankBreakdown>& by_unit);

// The critical path, in time order. It starts from the task that ends last (lowest unit, then
// lowest task, on a tie) and steps back to whatever made the current task start when it did, the
// latest of: its dependencies and its stream predecessor (compute and dp streams: the previous task
// on the stream, by end; pp stream: the previous pp task, by posting time, since posts are in
// program order) and, for a transfer that began after it was posted, the peer task posted last (PP:
// the matching send or recv of the peer stage, same replica; DP: the same call on the other
// replicas), by posting time. A tie keeps the chain on its own unit. It ends at a task with nothing
// before it.
std::vector<TaskRef> critical_chain(const models::Workload& workload, const backend::Trace& trace);

// Short task names shared by the report and the Perfetto trace: "F mb3 c1", "B mb3 c1",
// "optimizer", "data loading", "pp send fwd mb3 c1", "pp recv bwd mb3 c1", "dp reduce_scatter c0";
// the tied-embedding gradient exchange between the first and last stages is "pp send embedding grad".
// The micro-batch and chunk appear only when set (>= 0).
std::string task_name(const models::Task& task);

std::string to_text(const IterationReport& report);
// Stable keys: iteration_time_s, tokens_per_s, mfu, hfu, flop_convention, mfu_full_attention,
// full_attention_flop_convention, backend, gpu, breakdown
// {mean, critical, critical_stage, critical_replica} (seconds per category), memory (bytes per GPU:
// peak_stage, peak, stages; only when present), plan {tp, pp, dp, vpp, micro_batch_size,
// num_microbatches, global_batch_size, world_size}, heat_map {dp, pp, compute_s, slowdown},
// critical_path, stragglers (straggler_report.h), samples (sample_report.h) and provenance
// (provenance.h) when present.
std::string to_json(const IterationReport& report);

}  // namespace megasim::scenarios
