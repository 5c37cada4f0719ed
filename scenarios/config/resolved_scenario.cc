#include "scenarios/config/resolved_scenario.h"

#include <utility>

namespace megasim::scenarios {

ResolvedScenario resolve(Scenario scenario) {
  DeviceModel device = device_model(scenario);
  validate(scenario, device);
  models::ResolvedPlan plan =
      models::resolve_plan(scenario.model, scenario.plan, scenario.cluster.gpus, scenario.cluster.gpus_per_server);
  models::require_fp8_support(device.gpu, models::to_string(plan.plan.fp8));
  models::MemoryEstimate memory = models::estimate_memory(scenario.model, plan);
  return ResolvedScenario{std::move(scenario), std::move(device), std::move(plan), std::move(memory)};
}

}  // namespace megasim::scenarios
