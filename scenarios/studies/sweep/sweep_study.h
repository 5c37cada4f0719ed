// `megasim sweep`: which plan is fastest for this model on this cluster? Enumerates the parallel
// plans of a scenario (TP x PP x virtual stages x micro-batch, DP derived; any scenario key too,
// with `--vary`, as a cross product), lets Megatron's validation (models::resolve_plan, through
// run_plan_study) and the memory estimate accept or reject each, simulates the accepted plans on a
// pool of threads and ranks them by throughput. Each accepted plan is screened first
// (screen_iteration_study: replica 0 stands for every replica), then, per point of the varied keys,
// simulated in full (run_iteration_study) in the order of the screens until no remaining screen can
// reach the point's confirm_top-th best full result; the others keep their screens (kScreened).
// Why a screen bounds its full result, the confirmation rule and the candidate space:
// docs/design/sweep.md.
//
// Contract: a candidate is kInvalid when validation throws (its reason is the error's message),
// kOutOfMemory when its peak stage's memory exceeds the GPU's HBM (the reason gives both), else it
// is simulated. Rows are ranked by tokens/s, descending, ties by the candidate's key (point of the
// varied keys, tp, pp, layers per virtual stage, micro-batch, ascending); the report does not depend
// on the thread count or the order in which simulations finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/scenario.h"
#include "scenarios/report/iteration_report.h"
#include "scenarios/studies/topology_cache.h"

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
// s < 1), more than kMaxSweepAxisValues values, or a value listed twice (compared as parsed).
SweepAxis parse_sweep_axis(std::string_view spec);
inline constexpr std::size_t kMaxSweepAxisValues = 4096;

struct SweepOptions {
  std::vector<SweepAxis> vary;            // cross product, the last axis varying fastest; keys distinct
  std::int64_t max_micro_batch_size = 0;  // largest micro-batch enumerated; 0: the global batch size
  // Plans of each point certified by a full simulation (the contract at the top); 0: every plan.
  std::size_t confirm_top = kDefaultConfirmTop;
  static constexpr std::size_t kDefaultConfirmTop = 10;
};

// kSimulated: simulated in full (every replica); kScreened: only screened (one replica for all).
enum class SweepStatus : std::uint8_t { kSimulated, kScreened, kOutOfMemory, kInvalid };
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
  std::string reason;  // why it was rejected, or why a screened plan was not simulated in full
};

// The options a sweep of `base` runs with: `options`, and, unless the user varies them, for an MoE
// model plan.expert_model_parallel_size over the divisors of num_experts (at most the GPU count),
// and for a scenario that uses context parallelism plan.context_parallel_size over the powers of 2
// up to kMaxSearchedContextParallel whose 2 x cp chunks split the sequence: the search covers
// expert and context parallelism too. A dense scenario without CP sweeps as asked.
SweepOptions with_searched_parallelism(const Scenario& base, SweepOptions options);
inline constexpr std::int64_t kMaxSearchedContextParallel = 64;

// The key that breaks ties: (point, tp, pp, layers_per_virtual_stage, micro_batch_size).
bool key_less(const SweepCandidate& a, const SweepCandidate& b);

// A proxy for an accepted candidate's simulation time, for ordering work only (costliest first, so
// that no long simulation starts last while other workers idle): its compute tasks, (GPUs / tp)
// units x micro-batches x model chunks. Never changes a result.
double estimated_cost(const SweepCandidate& c);

// A candidate and, when simulated, what the simulation reported: the full simulation's figures for
// kSimulated, the screen's for kScreened.
struct SweepRow {
  SweepCandidate candidate;
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  RankBreakdown breakdown;  // IterationReport::mean: compute, exposed TP/PP/DP, bubble, waiting
  // The screen's tokens/s (one replica for all), the bound on tokens_per_s; 0 when not screened
  // (confirm_top 0, or replicas that differ).
  double screen_tokens_per_s = 0;
};

struct SweepReport {
  std::vector<std::string> varied_keys;
  std::string flop_convention;
  std::size_t confirm_top = 0;  // SweepOptions::confirm_top
  // Rows simulated in full ranked (the contract at the top), then screened rows by their screens,
  // then rejected rows by key.
  std::vector<SweepRow> rows;
  std::size_t simulated = 0, screened = 0, out_of_memory = 0, invalid = 0;
  // Rows simulated in full faster than their screen (relative 1e-9), against the screen's contract,
  // and the largest such excess (full / screen - 1): 0 unless the ranking below the certified plans
  // may be inexact.
  std::size_t bound_violations = 0;
  static constexpr double kBoundTolerance = 1e-9;
  double largest_bound_excess = 0;
  double wall_time_s = 0;  // host time of the whole study (not deterministic; in no writer's output)
};

// Every candidate of the space above, in key order, each accepted or rejected with its reason.
// Throws sim::ConfigError for bad options (a key varied twice) or when a point of the varied keys
// makes the scenario invalid outside its plan (validate(): e.g. cluster.gpus not a multiple of the
// server size), naming the key and value; and ("--vary") when the varied keys' cross product has
// more than kMaxSweepCandidates points or the candidates pass kMaxSweepCandidates (counted as they
// are enumerated, before more are kept).
// The whole plan space of MegaScale's 175B model on 12,288 GPUs is a few thousand candidates.
inline constexpr std::size_t kMaxSweepCandidates = 250'000;
std::vector<SweepCandidate> enumerate_sweep(const Scenario& base, const SweepOptions& options);

// The candidate's scenario: base with its overrides applied.
Scenario candidate_scenario(const Scenario& base, const SweepCandidate& candidate);

// Simulates an accepted candidate in full: exactly run_iteration_study(candidate_scenario(...))
// without the straggler what-ifs, whose report it copies (status kSimulated). A rejected candidate
// is returned as it is; a screened one is simulated in full. Thread-safe: it shares nothing between
// calls.
SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate);
// The same, with the candidate's topology from `topologies` (shared with the study's other runs).
SweepRow evaluate_sweep_candidate(const Scenario& base, const SweepCandidate& candidate, TopologyCache& topologies);

// Screens an accepted candidate: screen_iteration_study(candidate_scenario(...)), status kScreened
// with the screen's figures and screen_tokens_per_s; kSimulated when its replicas differ (the screen
// then was the full simulation). A rejected candidate is returned as it is. Thread-safe.
SweepRow screen_sweep_candidate(const Scenario& base, const SweepCandidate& candidate);
SweepRow screen_sweep_candidate(const Scenario& base, const SweepCandidate& candidate, TopologyCache& topologies);

// The confirmation (the contract at the top), for any executor: which screened rows to simulate in
// full, in what order, and the rows that come of it. Not thread-safe: one caller hands out the work.
class SweepConfirmation {
 public:
  // One row per candidate of enumerate_sweep, in any order, each as screen_sweep_candidate returned
  // it (rejected rows included); confirm_top >= 1. Indices are positions in this vector.
  SweepConfirmation(std::vector<SweepRow> screened, std::size_t confirm_top);
  // A row (an index into the rows) to simulate in full next, or nullopt when the full results recorded
  // so far show that no row not yet handed out can reach its point's top: then none ever will (the
  // bounds to beat only rise). Each index is handed out once: first the rows the rule simulates
  // whatever the results (a point's first confirm_top by screen, less those the screen simulated in
  // full), costliest first (estimated_cost), then the others by screen, descending.
  std::optional<std::size_t> next();
  // The candidate of a row.
  [[nodiscard]] const SweepCandidate& candidate(std::size_t index) const { return screened_.at(index).candidate; }
  // evaluate_sweep_candidate's row for an index next() handed out.
  void record(std::size_t index, SweepRow full);
  // Rows handed out and not yet recorded, plus those that would still be handed out as things stand
  // (a progress total that can only shrink).
  [[nodiscard]] std::size_t remaining() const;
  // The rows of the sequential rule (the contract at the top), in the order given. Precondition (asserted):
  // every index handed out has been recorded.
  [[nodiscard]] std::vector<SweepRow> rows() const;

 private:
  [[nodiscard]] double bound_to_beat(std::size_t point) const;  // -inf until confirm_top are known

  std::vector<SweepRow> screened_;
  std::vector<std::optional<SweepRow>> full_;  // by row
  std::size_t confirm_top_;
  std::vector<std::size_t> order_;                  // screened rows by screen (descending), then key
  std::vector<bool> handed_;                        // by position in order_
  std::vector<std::size_t> always_;                 // positions in order_ the rule always simulates, costliest first
  std::size_t always_cursor_ = 0;                   // into always_
  std::size_t cursor_ = 0;                          // into order_
  std::vector<std::vector<double>> full_by_point_;  // tokens/s of the full results, descending
  std::size_t in_flight_ = 0;
};

// The report of rows evaluated elsewhere (one per candidate of enumerate_sweep, in any order; e.g.
// SweepConfirmation::rows, or evaluate_sweep_candidate run by another executor): counts them and
// ranks them as run_sweep_study does. wall_time_s is left 0.
SweepReport make_sweep_report(const SweepOptions& options, std::vector<SweepRow> rows);

// Called after each simulation as (phase, finished, total): phase "screened" for the screens,
// "simulated in full" for the full simulations (whose total may shrink as the bounds rise); calls
// are serialised but may come from any of the pool's threads.
using SweepProgress = std::function<void(std::string_view phase, std::size_t done, std::size_t total)>;

// enumerate_sweep, then screen_sweep_candidate for every accepted candidate and the confirmation
// (every accepted candidate evaluate_sweep_candidate'd when confirm_top is 0) on `threads` threads
// (0: one per hardware thread), then make_sweep_report. An exception in a simulation stops the pool (no new
// simulation starts) and is rethrown once it has stopped (the first by key of those that failed).
SweepReport run_sweep_study(const Scenario& base, const SweepOptions& options, unsigned threads = 0,
                            const SweepProgress& progress = {});

// Text: a header with the counts, then the top `top` rows simulated in full (0: all) ranked, with
// tokens/s, MFU, memory, iteration time and breakdown; screened and rejected rows are only counted.
std::string to_text(const SweepReport& report, std::size_t top = 0);
// CSV with a header: every row, simulated, screened and rejected (status and reason columns; empty
// cells for figures a row does not have; a rank only for rows simulated in full). One column per
// varied key first.
std::string to_csv(const SweepReport& report);
// JSON: {"varied_keys", "flop_convention", "confirm_top", "counts", "rows": [...]} with every row;
// `top` limits the rows simulated in full that are written (0: all; screened and rejected rows are
// always written).
std::string to_json(const SweepReport& report, std::size_t top = 0);

}  // namespace megasim::scenarios
