// `megasim run`: one training iteration of the scenario's plan, simulated rank by rank on the
// modelled cluster: resolve the plan (errors for impossible plans and plans that do not fit),
// build the workload, execute it on the fabric, and summarise the trace.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/resolved_scenario.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/iteration_report.h"
#include "topology/topology.h"

namespace megasim::scenarios {

struct RunResult {
  models::Workload workload;
  backend::Trace trace;
  IterationReport report;
  double wall_time_s = 0;         // host time spent (not deterministic; not in report.json)
  backend::IterationStats stats;  // simulator counters (benchmarks)
};

struct RunOptions {
  bool record_flows = false;  // fill Trace::flows
  // Links of the scenario's topology (Topology::build of effective_cluster) that failed before the
  // iteration and are routed around (campaigns).
  std::vector<topo::LinkId> failed_links;
  // With active [stragglers], also run the straggler analysis (up to five more simulations,
  // straggler_report.h) into report.stragglers; callers that need only the iteration time
  // (campaigns, sweeps) turn it off.
  bool straggler_whatifs = true;
  // The scenario's topology when the caller already has it (sweeps and campaigns run many
  // simulations on one cluster): its parameters must equal effective_cluster(scenario) (asserted).
  // Null: built here.
  std::shared_ptr<const topo::Topology> topology;
  // Called on the device model after the scenario's calibration file was applied and before the
  // simulation (`megasim calibrate --measured` tries parameter values this way without writing
  // files); empty: the device model as the scenario gives it. The result must still pass
  // models::validate and backend::validate (checked).
  std::function<void(DeviceModel&)> adjust_device;
};

// The iteration of a scenario resolved once (resolved_scenario.h). Throws sim::ConfigError for a
// plan whose peak memory per GPU exceeds the GPU's HBM, or an adjust_device result out of range.
RunResult run_iteration_study(const ResolvedScenario& scenario, RunOptions options = {});
// The same, resolving the scenario first (resolve: also throws for an invalid scenario or an
// impossible plan).
RunResult run_iteration_study(const Scenario& scenario, RunOptions options = {});

// The sweep's screen of a plan (scenarios/studies/sweep/sweep_study.h): run_iteration_study's
// iteration with data- parallel replica 0 standing for every replica
// (backend::IterationInputs::one_replica) when the replicas are identical
// (backend::replicas_identical), which leaves out the ECMP collisions of the other replicas'
// pipeline transfers with replica 0's. When they differ only in speed (slow hosts: units whose
// GPUs are slowed), every replica gets the slowest replica's speeds first
// (backend::slowest_replica_slowdowns: no replica of the full iteration outruns it), so the screen
// stays a bound from above on throughput (by observation, as without slow hosts). The report holds
// summarize_throughput's figures. When the replicas differ otherwise (jitter, pauses, failed
// links) every replica is simulated: the report is then run_iteration_study's, without the
// straggler what-ifs, and one_replica is false. Throws as run_iteration_study. `topology`: as
// RunOptions::topology (null: built here).
struct ScreenResult {
  IterationReport report;
  bool one_replica = false;
};
ScreenResult screen_iteration_study(const Scenario& scenario, std::shared_ptr<const topo::Topology> topology = nullptr);
// The same with RunOptions' topology and adjust_device (its other fields are ignored).
ScreenResult screen_iteration_study(const Scenario& scenario, const RunOptions& options);
ScreenResult screen_iteration_study(const ResolvedScenario& scenario, const RunOptions& options);

}  // namespace megasim::scenarios
