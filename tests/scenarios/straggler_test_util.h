// Straggler tests' scenario: 4 servers of 8 A100s, TP 8 x DP 4, a GPT of 4 layers: one (stage,
// replica) unit per server, and the data-parallel gradient reduction after the last backward (no
// overlap), so every replica's timeline is compute, then the reduction that waits for the slowest,
// then the optimizer.
#pragma once

#include <stdexcept>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/report/straggler_report.h"

namespace megasim::scenarios::testing {

inline Scenario dp_scenario() {
  return load_scenario_text(R"(
[cluster]
gpu = "A100"
gpus = 32
[model]
num_layers = 4
hidden_size = 4096
num_attention_heads = 32
seq_length = 2048
[plan]
tensor_model_parallel_size = 8
pipeline_model_parallel_size = 1
micro_batch_size = 1
global_batch_size = 16
num_layers_per_virtual_pipeline_stage = 0
use_distributed_optimizer = true
sequence_parallel = true
overlap_grad_reduce = false
overlap_param_gather = false
)");
}

// The what-if of that name; throws when the report has none.
inline const StragglerWhatIf& whatif(const StragglerReport& r, const std::string& name) {
  for (const StragglerWhatIf& w : r.whatifs) {
    if (w.name == name) return w;
  }
  throw std::runtime_error("no what-if " + name);
}

}  // namespace megasim::scenarios::testing
