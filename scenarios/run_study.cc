#include "scenarios/run_study.h"

#include <chrono>
#include <utility>

#include "backend/sim/iteration_executor.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "scenarios/device.h"
#include "scenarios/memory_budget.h"
#include "scenarios/straggler_draw.h"
#include "scenarios/straggler_report.h"
#include "sim/rng.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace megasim::scenarios {

RunResult run_iteration_study(const Scenario& s, bool record_flows, std::vector<topo::LinkId> failed_links,
                              bool straggler_whatifs) {
  const auto wall_start = std::chrono::steady_clock::now();
  validate(s);
  const DeviceModel device = device_model(s);
  const models::GpuSpec& gpu = device.gpu;
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  const models::MemoryEstimate memory = models::estimate_memory(s.model, plan);
  models::require_fits(memory, gpu);

  RunResult result;
  result.workload = models::build_workload(s.model, plan);
  // The straggler what-ifs keep this simulation's trace while three more run at once.
  const bool whatifs = s.stragglers.active() && straggler_whatifs;
  require_memory_for(iteration_footprint(result.workload, s.cluster.gpus, record_flows), whatifs ? 4 : 1);
  const topo::Topology topology = topo::Topology::build(effective_cluster(s));

  backend::IterationInputs inputs;
  inputs.workload = &result.workload;
  inputs.topology = &topology;
  inputs.placement = plan_placement(s, topology, plan.tp, plan.dp, plan.pp);
  inputs.fabric = device.fabric;
  inputs.fabric.ecmp.seed = sim::RngStreams(s.seed).stream_seed("fabric.ecmp");
  inputs.collective = device.collective;
  inputs.gpu = gpu;
  inputs.calibration = device.compute;
  inputs.record_flows = record_flows;
  const bool stragglers = s.stragglers.active();
  StragglerDraw draw;
  if (stragglers) {
    draw = draw_stragglers(s.stragglers, result.workload, topology, s.seed);
    apply(draw, inputs);
  }
  inputs.failed_links = std::move(failed_links);
  result.trace = backend::simulate_iteration(inputs, &result.stats);

  result.report = summarize(result.workload, result.trace, gpu);
  if (stragglers && straggler_whatifs) {
    inputs.record_flows = false;
    result.report.stragglers = analyse_stragglers(s.stragglers, draw, inputs, result.trace);
  }
  result.report.memory = memory;
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace megasim::scenarios
