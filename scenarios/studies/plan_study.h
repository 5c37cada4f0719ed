// `megasim plan`: the parallel plan resolved against the model and cluster (derived sizes, Megatron's
// validation), parameters, memory per GPU on every pipeline stage and whether it fits, and the
// FLOPs of one iteration with their convention. Answers "is this plan possible" before any
// simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/memory.h"
#include "models/plan.h"
#include "scenarios/config/resolved_scenario.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

struct PlanReport {
  models::ResolvedPlan plan;
  std::string gpu;
  double hbm_bytes = 0;
  std::int64_t parameters = 0;              // whole model, tied embeddings once
  models::MemoryEstimate memory;            // per pipeline stage, one GPU
  bool fits = false;                        // the peak stage fits in HBM
  double model_flops_per_iteration = 0;     // no recompute (MFU numerator)
  double hardware_flops_per_iteration = 0;  // with recompute (HFU numerator)
  std::int64_t tokens_per_iteration = 0;
  std::string flop_convention;
};

// Throws sim::ConfigError for an impossible plan (naming the key); a plan that is possible but does
// not fit in memory is reported with fits = false.
PlanReport run_plan_study(const Scenario& scenario);
// The same for a scenario already resolved (resolved_scenario.h): no error.
PlanReport run_plan_study(const ResolvedScenario& scenario);

std::string to_text(const PlanReport& report);
std::string to_json(const PlanReport& report);

}  // namespace megasim::scenarios
