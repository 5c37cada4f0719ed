// The Scenario: plain structs describing one study's inputs. TOML files, `--set` overrides and (later)
// Python all build this same struct; nothing below scenarios/ sees a toml:: type.
#pragma once

#include <cstdint>
#include <string>

#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "topology/cluster_params.h"

namespace megasim::scenarios {

// The parallel split used when a study needs Megatron process groups (for example the DP groups
// of `megasim collective --group dp`). Data parallelism is derived from the GPU count.
struct PlanParams {
  std::int64_t tensor_model_parallel_size = 8;
  std::int64_t pipeline_model_parallel_size = 8;
};

struct Scenario {
  std::string name = "default";
  std::uint64_t seed = 1;  // master seed; every random stream derives from it by name
  topo::ClusterParams cluster;
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  PlanParams plan;
};

// Checks every section (throws sim::ConfigError naming the first bad key).
void validate(const Scenario& scenario);

}  // namespace megasim::scenarios
