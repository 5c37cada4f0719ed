#include "scenarios/config/scenario.h"

#include "models/gpu_spec.h"
#include "scenarios/config/device.h"

namespace megasim::scenarios {

Scenario::Scenario() {
  cluster.nvlink_gbytes_per_s = 0;  // from the GPU
  cluster.nic_gbps = 0;             // from the device (scenario_nic_gbps)
  model.num_layers = 96;
  model.hidden_size = 12288;
  model.num_attention_heads = 128;
  model.seq_length = 2048;
  model.vocab_size = 64000;
  plan.tensor_model_parallel_size = 8;
  plan.pipeline_model_parallel_size = 8;
  plan.num_layers_per_virtual_pipeline_stage = 2;
  plan.sequence_parallel = true;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 768;
  plan.use_distributed_optimizer = true;
  plan.recompute_granularity = models::RecomputeGranularity::kSelective;
}

topo::Placement plan_placement(const Scenario& scenario, const topo::Topology& topology, std::int64_t tensor,
                               std::int64_t data, std::int64_t pipeline) {
  return topo::make_placement(topology, topo::PlanShape{tensor, data, pipeline}, scenario.placement, scenario.seed);
}

void validate(const Scenario& scenario) {
  validate(scenario, device_model(scenario));
}

void validate(const Scenario& scenario, const DeviceModel& device) {
  topo::validate(device.cluster);
  backend::validate(scenario.fabric);
  models::validate(scenario.collective);
  models::validate(scenario.model);
  models::validate(scenario.stragglers);
}

}  // namespace megasim::scenarios
