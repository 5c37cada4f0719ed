// `megasim validate`: a plan run on a real backend and in the simulator calibrated for that hardware,
// compared (DESIGN.md "Real backends"). Both sides are backend::Trace values of the same workload,
// so the comparison is a diff of two traces:
//  - the iteration time: the simulator's against the median of the measured iterations;
//  - per op type (task category: forward, backward, optimizer, pipeline transfers, DP collectives,
//    ...): seconds per iteration a rank spends in tasks of that category (end - start, so waiting
//    for a peer counts as a transfer's time in both), averaged over ranks;
//  - per rank: the busy compute time and the time its last task ends.
// Errors are (predicted - measured) / measured in percent (0 where both sides are under 0.1 ms).
// With a bound, the report also carries the verdict of validate_verdict.h: whether the machine's
// timing spread lets the error be held against the bound.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/studies/validate_verdict.h"

namespace megasim::scenarios {

struct ValidationRow {
  std::string name;
  double predicted_s = 0;
  double measured_s = 0;
  double error_percent = 0;
};

struct RankValidation {
  std::int64_t rank = 0;
  std::int64_t stage = 0;
  std::int64_t replica = 0;
  ValidationRow compute;  // busy compute seconds
  ValidationRow end;      // when its last task ended
};

struct ValidationReport {
  std::string scenario;
  std::string backend;                      // the measured side's
  std::vector<double> measured_iterations;  // seconds, in run order
  std::size_t median_iteration = 0;         // the one compared below
  ValidationRow iteration;
  std::vector<ValidationRow> per_op;
  std::vector<RankValidation> per_rank;
  // The calibration the prediction used: "file" (the scenario's calibration.file), or "interleaved"
  // (measured in rounds, one before each measured iteration, cli/cpu_validate.h); then the
  // prediction of each round's calibration, seconds, in run order, and the round compared (the
  // median prediction, chosen as median_iteration chooses).
  std::string calibration = "file";
  std::vector<double> predicted_iterations;
  std::size_t median_prediction = 0;
  std::optional<ValidationVerdict> verdict;
};

// judge() of the report's iteration error, its measured iterations and its rounds' predictions.
ValidationVerdict judge(const ValidationReport& report, double bound_percent);

// The index of the median iteration of `traces` by iteration time (for an even count the upper of
// the two middle ones); traces must not be empty.
std::size_t median_iteration(const std::vector<backend::Trace>& traces);

// `measured` holds at least one iteration; every trace's units are stages of `workload` whose records
// match the stage program one to one; the measured traces have one unit per rank and cover every
// rank the predicted one covers (its units may share ranks, as the simulator's TP groups do).
ValidationReport compare(const models::Workload& workload, const backend::Trace& predicted,
                         const std::vector<backend::Trace>& measured, const std::string& scenario);

// Shard mode (one rank's compute measured on one device, backend/cuda/shard_runner.h): only compute
// tasks count. `measured` holds one unit (the measured rank); the prediction is that rank's unit.
// The "iteration" row is the rank's busy compute time per iteration; per_op keeps the compute
// categories; per_rank has the one rank.
ValidationReport compare_compute(const models::Workload& workload, const backend::Trace& predicted,
                                 const std::vector<backend::Trace>& measured, const std::string& scenario);

std::string to_text(const ValidationReport& report);
// Keys: predicted_iteration_time_s, measured_iteration_time_s, error_percent, measured_iterations_s,
// calibration, predicted_iterations_s, per_op (name -> predicted_s, measured_s, error_percent),
// per_rank (list); with a verdict: verdict ("within", "outside", "inconclusive"), bound_percent,
// uncertainty_percent, measured_spread_percent, predicted_spread_percent (validate_verdict.h).
std::string to_json(const ValidationReport& report);

}  // namespace megasim::scenarios
