// Plans and small queries shared by the workload tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/plan.h"
#include "models/workload.h"

namespace megasim::models::testing {

// A small GPT (24 layers divide into pp x v for every shape used here; 8 heads allow tp up to 8).
inline ModelSpec small_gpt() {
  ModelSpec m;
  m.num_layers = 24;
  m.hidden_size = 64;
  m.num_attention_heads = 8;
  m.seq_length = 32;
  m.vocab_size = 1000;
  return m;
}

struct Shape {
  std::int64_t tp = 1, pp = 1, dp = 1, m = 1, v = 1, micro = 1;
};

// The plan of `shape` on tp*pp*dp GPUs (8 per server), after `change` edits the Megatron arguments.
inline ResolvedPlan resolved(
    const ModelSpec& model, const Shape& s, const std::function<void(ParallelPlan&)>& change = [](ParallelPlan&) {}) {
  ParallelPlan p;
  p.tensor_model_parallel_size = s.tp;
  p.pipeline_model_parallel_size = s.pp;
  p.num_layers_per_virtual_pipeline_stage = s.v > 1 ? model.num_layers / (s.pp * s.v) : 0;
  p.micro_batch_size = s.micro;
  p.global_batch_size = s.m * s.micro * s.dp;
  change(p);
  return resolve_plan(model, p, s.tp * s.pp * s.dp, 8);
}

// Pipeline shapes: plain 1F1B (m below, at and above pp) and interleaved, whose chunk boundaries
// wrap from the last stage to the first.
inline std::vector<Shape> pipeline_shapes() {
  return {{1, 1, 1, 3, 1, 1}, {1, 2, 1, 2, 1, 1}, {1, 4, 1, 2, 1, 1}, {2, 4, 2, 8, 1, 1}, {1, 2, 1, 4, 2, 1},
          {1, 2, 1, 2, 3, 1}, {2, 4, 1, 8, 3, 1}, {1, 3, 2, 9, 4, 1}, {1, 4, 1, 4, 2, 1}, {4, 8, 1, 16, 3, 1}};
}

inline std::string describe(const Shape& s, std::int64_t stage) {
  return "tp " + std::to_string(s.tp) + " pp " + std::to_string(s.pp) + " dp " + std::to_string(s.dp) + " m " +
         std::to_string(s.m) + " v " + std::to_string(s.v) + " stage " + std::to_string(stage);
}

inline const KernelList& kernels_of(const Workload& w, const Task::KernelRun& run) {
  return w.kernels.at(static_cast<std::size_t>(run.kernels));
}

}  // namespace megasim::models::testing
