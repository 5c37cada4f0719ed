#include "scenarios/studies/run_study.h"

#include <chrono>
#include <memory>
#include <utility>

#include "backend/sim/iteration_executor.h"
#include "backend/sim/straggler_draw.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "scenarios/config/device.h"
#include "scenarios/report/straggler_report.h"
#include "scenarios/studies/memory_budget.h"
#include "sim/error.h"
#include "sim/rng.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

// What both studies build before simulating: the checked plan, its workload, the cluster, the
// simulation's inputs with the stragglers drawn and applied. The inputs point at the workload and
// the topology, so an IterationSetup is used where it was built (not copied or moved).
struct IterationSetup {
  DeviceModel device;
  models::MemoryEstimate memory;
  models::Workload workload;
  std::shared_ptr<const topo::Topology> topology;  // shared with the caller's other runs
  backend::IterationInputs inputs;
  backend::StragglerDraw draw;
};

// Throws sim::ConfigError for a plan that does not fit, or an adjusted device out of range.
std::unique_ptr<IterationSetup> prepare(const ResolvedScenario& resolved, const RunOptions& options) {
  const Scenario& s = resolved.scenario;
  const models::ResolvedPlan& plan = resolved.plan;
  DeviceModel device = resolved.device;
  if (options.adjust_device) {
    options.adjust_device(device);
    models::validate(device.compute);
    backend::validate(device.fabric);
  }
  const models::MemoryEstimate& memory = resolved.memory;
  models::require_fits(memory, device.gpu);
  // The straggler what-ifs keep this simulation's trace while three more run at once. Checked from
  // the plan, before the workload (whose tasks grow with the micro-batches) is built.
  const bool whatifs = s.stragglers.active() && options.straggler_whatifs;
  require_memory_for(planned_footprint(s.model, plan, s.cluster.gpus, options.record_flows), whatifs ? 4 : 1);
  models::Workload workload = models::build_workload(s.model, plan);
  std::shared_ptr<const topo::Topology> topology = options.topology;
  if (topology == nullptr) {
    topology = std::make_shared<const topo::Topology>(topo::Topology::build(device.cluster));
  }
  MEGASIM_ASSERT(topology->params() == device.cluster, "a run was handed the topology of another cluster");
  auto setup = std::make_unique<IterationSetup>(
      IterationSetup{std::move(device), memory, std::move(workload), std::move(topology), {}, {}});
  backend::IterationInputs& inputs = setup->inputs;
  inputs.workload = &setup->workload;
  inputs.topology = setup->topology.get();
  inputs.placement = plan_placement(s, *setup->topology, plan.tp, plan.replicas(), plan.pp);
  inputs.fabric = setup->device.fabric;
  inputs.fabric.ecmp.seed = sim::RngStreams(s.seed).stream_seed("fabric.ecmp");
  inputs.collective = setup->device.collective;
  inputs.gpu = setup->device.gpu;
  inputs.calibration = setup->device.compute;
  inputs.record_flows = options.record_flows;
  if (s.stragglers.active()) {
    setup->draw = backend::draw_stragglers(s.stragglers, setup->workload, *setup->topology, s.seed);
    apply(setup->draw, inputs);
  }
  inputs.failed_links = options.failed_links;
  return setup;
}

}  // namespace

RunResult run_iteration_study(const Scenario& s, RunOptions options) {
  return run_iteration_study(resolve(s), std::move(options));
}

RunResult run_iteration_study(const ResolvedScenario& resolved, RunOptions options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const Scenario& s = resolved.scenario;
  const std::unique_ptr<IterationSetup> setup = prepare(resolved, options);
  backend::IterationInputs& inputs = setup->inputs;
  const models::GpuSpec& gpu = setup->device.gpu;

  RunResult result;
  result.trace = backend::simulate_iteration(inputs, &result.stats);
  result.report = summarize(setup->workload, result.trace, gpu);
  if (s.stragglers.active() && options.straggler_whatifs) {
    inputs.record_flows = false;
    result.report.stragglers = analyse_stragglers(s.stragglers, setup->draw, inputs, result.trace);
  }
  result.report.memory = setup->memory;
  result.report.provenance = provenance_of(s, result.trace.backend);
  result.workload = std::move(setup->workload);  // the inputs point at it: last
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

ScreenResult screen_iteration_study(const Scenario& s, std::shared_ptr<const topo::Topology> topology) {
  RunOptions options;
  options.topology = std::move(topology);
  return screen_iteration_study(s, options);
}

ScreenResult screen_iteration_study(const Scenario& s, const RunOptions& given) {
  return screen_iteration_study(resolve(s), given);
}

ScreenResult screen_iteration_study(const ResolvedScenario& resolved, const RunOptions& given) {
  RunOptions options;
  options.straggler_whatifs = false;
  options.topology = given.topology;
  options.adjust_device = given.adjust_device;
  const std::unique_ptr<IterationSetup> setup = prepare(resolved, options);
  backend::IterationInputs& inputs = setup->inputs;
  ScreenResult result;
  if (!backend::replicas_identical(inputs) && backend::replicas_alike_but_for_speed(inputs)) {
    inputs.gpu_slowdown = backend::slowest_replica_slowdowns(inputs);  // now identical
  }
  result.one_replica = backend::replicas_identical(inputs);
  inputs.one_replica = result.one_replica;
  const backend::Trace trace = backend::simulate_iteration(inputs);
  result.report = result.one_replica ? summarize_throughput(setup->workload, trace, setup->device.gpu)
                                     : summarize(setup->workload, trace, setup->device.gpu);
  result.report.memory = setup->memory;
  return result;
}

}  // namespace megasim::scenarios
