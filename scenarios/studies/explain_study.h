// `megasim explain`: why two runs differ in MFU (for example the same plan on 256 and on 12,288
// GPUs), as a waterfall over the mechanisms of the report's breakdown (iteration_report.h): compute,
// exposed TP, exposed PP, exposed DP, pipeline bubble, waiting for other ranks; then over what the
// production cluster adds to an ideal one, each measured by simulating the run without it:
//  - stragglers: the run with stragglers.enabled = false (slow hosts, jitter, pauses, drift);
//  - collisions: what ECMP hashing costs, against the run with fabric.routing = adaptive (each flow
//    on the least-loaded of its equal-cost paths when it starts, so flows no longer collide by
//    hashing onto one link while others idle). Spray would remove every collision but takes
//    minutes to simulate at thousands of GPUs; adaptive takes 2-3x the ECMP run. Only ECMP runs;
//  - host_overheads: the run with the calibration's launch_overhead, host_sync_gap and
//    get_batch_host at zero;
//  - interaction: what the three together cost beyond the sum of each alone (either sign).
// A run's iteration time is then T = sum_k c_k(ideal) + sum_m (T - T_without_m) + interaction:
// the breakdown categories are those of the ideal run (every mechanism off), and each of the five
// terms above is a time of the full run. A mechanism that does not apply to a run (no stragglers,
// routing other than ECMP, no host gaps) adds nothing and is not simulated.
//
// The split. A run's MFU is f / (T * peak) for model FLOPs f per GPU and iteration time T, and the
// mean breakdown's categories c_k sum to T, so 1 / MFU = sum_k u_k with u_k = (c_k / T) / MFU: each
// mechanism's GPU time per model FLOP at peak. The waterfall replaces A's u_k by B's one mechanism at
// a time, in the order above; step j's MFU change is 1 / (B's first j terms + A's others) minus the
// same with j - 1, so the steps sum to MFU_B - MFU_A exactly. A mechanism whose time per unit of
// work is the same in both runs contributes nothing, whatever the runs' sizes. Like every
// waterfall of a non-additive quantity, a step's size depends on the order (the MFU is the inverse
// of a sum); the sign does not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/iteration_report.h"

namespace megasim::scenarios {

// What a production mechanism adds to a run's iteration: T - T_without_it, seconds.
struct MechanismCost {
  std::string mechanism;  // "stragglers", "collisions", "host_overheads", "interaction"
  double seconds = 0;
};

struct ExplainRun {
  std::string name;  // simulation.name
  std::int64_t gpus = 0;
  double iteration_time_s = 0;
  double mfu = 0;
  RankBreakdown mean;  // the report's mean breakdown
  // With the counterfactuals (run_explain_study): the mean breakdown of the ideal run, whose
  // categories the waterfall splits, and the mechanisms' costs. Without: the waterfall splits mean.
  std::optional<RankBreakdown> ideal;
  std::vector<MechanismCost> added;
};

struct ExplainStep {
  // "compute", "tp_exposed", "pp_exposed", "dp_exposed", "bubble", "waiting", then the added
  // mechanisms of the runs in their order
  std::string mechanism;
  double a_share = 0;  // c_k / T in run A
  double b_share = 0;
  double mfu_change = 0;  // this step of the waterfall (MFU as a fraction, not points)
};

struct ExplainReport {
  ExplainRun a, b;
  std::vector<ExplainStep> steps;  // in the order above; their mfu_change sum to b.mfu - a.mfu
};

// The waterfall between two runs (both with a positive iteration time and MFU, both with or both
// without the ideal breakdown and the same added mechanisms in the same order; asserted).
ExplainReport explain_mfu(const ExplainRun& a, const ExplainRun& b);
ExplainRun explain_run_of(const Scenario& scenario, const IterationReport& report);

// Simulates both scenarios (without the straggler what-ifs), each also without each mechanism that
// applies to it and without all of them, and explains their difference.
ExplainReport run_explain_study(const Scenario& a, const Scenario& b);

std::string to_text(const ExplainReport& report);
// Keys: a and b {name, gpus, iteration_time_s, mfu, breakdown, and with the counterfactuals
// ideal_breakdown and added_s {stragglers, collisions, host_overheads, interaction}}, mfu_change,
// steps [{mechanism, a_share, b_share, mfu_change}].
std::string to_json(const ExplainReport& report);

}  // namespace megasim::scenarios
