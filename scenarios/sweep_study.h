// `megasim sweep`: which plan is fastest for this model on this cluster? Enumerates the parallel
// plans of a scenario (TP x PP x virtual stages x micro-batch, DP derived), lets Megatron's
// validation (models::resolve_plan, through run_plan_study) and the memory estimate accept or reject
// each, simulates every accepted plan with the full iteration simulation (run_iteration_study) on a
// pool of threads, and ranks them by throughput. Any scenario key can be swept as well (`--vary`),
// as a cross product with the plan enumeration.
//
// The candidate space, for each point of the varied keys' cross product (the scenario with those
// assignments applied; a varied plan dimension is fixed to its value instead of being enumerated):
//  - tensor_model_parallel_size: every divisor of cluster.gpus_per_server (validation rejects those
//    that do not divide the heads, the query groups or ffn_hidden_size);
//  - pipeline_model_parallel_size: every divisor of model.num_layers (validation rejects those with
//    tp x pp not dividing cluster.gpus);
//  - num_layers_per_virtual_pipeline_stage: 0 (plain 1F1B) and, when pp >= 2, every divisor d of
//    num_layers / pp with d < num_layers / pp (d = num_layers / pp is one chunk per rank, the same
//    schedule as 0, so it is not listed twice);
//  - micro_batch_size: the powers of two from 1 up to the global batch size (or up to
//    SweepOptions::max_micro_batch_size); validation rejects those for which micro_batch_size x DP
//    does not divide global_batch_size, or whose micro-batch count the interleaved schedule cannot
//    use;
//  - every other key (sequence parallel, recompute, overlaps, the distributed optimizer, ...) as in
//    the scenario; switches Megatron turns off for a plan (sequence parallel at TP 1) are off there.
// A candidate is kInvalid when validation throws (its reason is the error's message), kOutOfMemory
// when its peak stage's memory exceeds the GPU's HBM (the reason gives both), else it is simulated.
//
// Determinism: rows are ranked by tokens/s, descending, ties by the candidate's key (point of the
// varied keys, tp, pp, layers per virtual stage, micro-batch, ascending); each simulation is a pure
// function of its scenario, so the report does not depend on the thread count or completion order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/iteration_report.h"
#include "scenarios/scenario.h"

namespace megasim::scenarios {

// One swept key and its values, as text in the key's type (the same parser as `--set`).
struct SweepAxis {
  std::string key;  // "section.key"
  std::vector<std::string> values;
};

// Parses "section.key=v1,v2,..." or "section.key=a..b" / "section.key=a..b:s" (integer keys only).
// a..b is a, 2a, 4a, ... up to b, plus b itself when the doubling does not land on it (so
// cluster.gpus=1024..12288 is 1024, 2048, 4096, 8192, 12288); a..b:s is a, a+s, a+2s, ... up to b
// (b included when reached). Every value is checked against the key's type and choices now.
// Throws sim::ConfigError naming the key and value: unknown key, malformed text, a value of the
// wrong type, a range on a non-integer key, an empty range (a > b, a < 1 for a doubling range,
// s < 1), or more than kMaxSweepAxisValues values.
SweepAxis parse_sweep_axis(std::string_view spec);
inline constexpr std::size_t kMaxSweepAxisValues = 4096;

struct SweepOptions {
  std::vector<SweepAxis> vary;            // cross product, the last axis varying fastest; keys distinct
  std::int64_t max_micro_batch_size = 0;  // largest micro-batch enumerated; 0: the global batch size
};

enum class SweepStatus : std::uint8_t { kSimulated, kOutOfMemory, kInvalid };
std::string_view to_string(SweepStatus status);

// One plan to try. `overrides` applied to the base scenario (apply_overrides) give the plan's
// scenario, so a candidate can be evaluated anywhere the base scenario is known.
struct SweepCandidate {
  std::size_t point = 0;                  // index of its point in the varied keys' cross product
  std::vector<std::string> point_values;  // the varied keys' values at that point, SweepOptions order
  std::int64_t tp = 1, pp = 1;
  std::int64_t layers_per_virtual_stage = 0;  // plan.num_layers_per_virtual_pipeline_stage
  std::int64_t micro_batch_size = 1;
  // "section.key=value": the point's keys, then those of the four above that are not varied.
  std::vector<std::string> overrides;
  // From the resolved plan (0 when validation rejected it before deriving them):
  std::int64_t gpus = 0, dp = 0, virtual_stages = 0, num_microbatches = 0;
  std::int64_t peak_memory_bytes = 0;  // per GPU, on the peak pipeline stage
  std::int64_t peak_stage = 0;
  double hbm_bytes = 0;
  SweepStatus status = SweepStatus::kSimulated;  // kSimulated here means "accepted, to simulate"
  std::string reason;                            // why it was rejected; empty when accepted
};

// The key that breaks ties: (point, tp, pp, layers_per_virtual_stage, micro_batch_size).
bool key_less(const SweepCandidate& a, const SweepCandidate& b);

// A proxy for an accepted candidate's simulation time, for ordering work only (costliest first, so
// that no long simulation starts last while other workers idle): its compute tasks, (GPUs / tp)
// units x micro-batches x model chunks. Never changes a result.
double estimated_cost(const SweepCandidate& c);

// A candidate and, when simulated, what the iteration simulation reported.
struct SweepRow {
  SweepCandidate candidate;
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  RankBreakdown breakdown;  // IterationReport::mean: compute, exposed TP/PP/DP, bubble, waiting
};

struct SweepReport {
  std::vector<std::string> varied_keys;
  std::string flop_convention;
  // Simulated rows ranked (the contract at the top), then rejected rows by key.
  std::vector<SweepRow> rows;
  std::size_t simulated = 0, out_of_memory = 0, invalid = 0;
  double wall_time_s = 0;  // host time of the whole study (not deterministic; in no writer's output)
};

// Every candidate of the space above, in key order, each accepted or rejected with its reason.
// Throws sim::ConfigError for bad options (a key varied twice) or when a point of the varied keys
// makes the scenario invalid outside its plan (validate(): e.g. cluster.gpus not a multiple of the
// server size), naming the key and value.
std::vector<SweepCandidate> enumerate_sweep(const Scenario& base, const SweepOptions& options);

// The candidate's scenario: base with its overrides applied.
Scenario candidate_scenario(const Scenario& base, const SweepCandidate& candidate);

// Simulates an accepted candidate: exactly run_iteration_study(candidate_scenario(...)) without the
// straggler what-ifs, whose report it copies. A rejected candidate is returned as it is.
// Thread-safe: it shares nothing between calls.
SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate);

// The report of rows evaluated elsewhere (one per candidate of enumerate_sweep, in any order; e.g.
// evaluate_sweep_candidate run by another executor): counts them and ranks them as run_sweep_study
// does. wall_time_s is left 0.
SweepReport make_sweep_report(const SweepOptions& options, std::vector<SweepRow> rows);

// Called after each simulation as (finished, total); calls are serialised but may come from any of
// the pool's threads.
using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// enumerate_sweep, then evaluate_sweep_candidate for every accepted candidate on `threads` threads
// (0: one per hardware thread), then make_sweep_report. An exception in a simulation stops the pool (no new
// simulation starts) and is rethrown once it has stopped (the first by key of those that failed).
SweepReport run_sweep_study(const Scenario& base, const SweepOptions& options, unsigned threads = 0,
                            const SweepProgress& progress = {});

// Text: a header with the counts, then the top `top` simulated rows (0: all) ranked, with tokens/s,
// MFU, memory, iteration time and breakdown; rejected rows are only counted.
std::string to_text(const SweepReport& report, std::size_t top = 0);
// CSV with a header: every row, simulated and rejected (status and reason columns; empty cells for
// figures a row does not have). One column per varied key first.
std::string to_csv(const SweepReport& report);
// JSON: {"varied_keys", "flop_convention", "counts", "rows": [...]} with every row; `top` limits the
// simulated rows written (0: all; rejected rows are always written).
std::string to_json(const SweepReport& report, std::size_t top = 0);

}  // namespace megasim::scenarios
