#include "scenarios/scenario.h"

#include <string>

#include "sim/error.h"

namespace megasim::scenarios {

void validate(const Scenario& scenario) {
  topo::validate(scenario.cluster);
  backend::validate(scenario.fabric);
  models::validate(scenario.collective);
  if (scenario.plan.tensor_model_parallel_size < 1) {
    throw sim::ConfigError("plan.tensor_model_parallel_size", std::to_string(scenario.plan.tensor_model_parallel_size),
                           "an integer >= 1");
  }
  if (scenario.plan.pipeline_model_parallel_size < 1) {
    throw sim::ConfigError("plan.pipeline_model_parallel_size",
                           std::to_string(scenario.plan.pipeline_model_parallel_size), "an integer >= 1");
  }
}

}  // namespace megasim::scenarios
