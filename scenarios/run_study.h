// `megasim run`: one training iteration of the scenario's plan, simulated rank by rank on the
// modelled cluster: resolve the plan (errors for impossible plans and plans that do not fit),
// build the workload, execute it on the fabric, and summarise the trace.
#pragma once

#include <string>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/iteration_report.h"
#include "scenarios/scenario.h"

namespace megasim::scenarios {

struct RunResult {
  models::Workload workload;
  backend::Trace trace;
  IterationReport report;
  double wall_time_s = 0;         // host time spent (not deterministic; not in report.json)
  backend::IterationStats stats;  // simulator counters (benchmarks)
};

// Throws sim::ConfigError for an invalid scenario, an impossible plan, or a plan whose peak memory
// per GPU exceeds the GPU's HBM. failed_links: links of the scenario's topology (Topology::build of
// effective_cluster) that failed before the iteration and are routed around (campaigns).
// straggler_whatifs: with active [stragglers], also run the straggler analysis (up to five more
// simulations, straggler_report.h) into report.stragglers; callers that need only the iteration time
// (campaigns) turn it off.
RunResult run_iteration_study(const Scenario& scenario, bool record_flows = false,
                              std::vector<topo::LinkId> failed_links = {}, bool straggler_whatifs = true);

}  // namespace megasim::scenarios
