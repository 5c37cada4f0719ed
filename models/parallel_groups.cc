#include "models/parallel_groups.h"

#include <string>

#include "sim/error.h"

namespace megasim::models {

ParallelLayout make_layout(std::int64_t world_size, std::int64_t tensor, std::int64_t pipeline) {
  if (tensor < 1) {
    throw sim::ConfigError("plan.tensor_model_parallel_size", std::to_string(tensor), "an integer >= 1");
  }
  if (pipeline < 1) {
    throw sim::ConfigError("plan.pipeline_model_parallel_size", std::to_string(pipeline), "an integer >= 1");
  }
  if (world_size % (tensor * pipeline) != 0) {
    throw sim::ConfigError("plan.pipeline_model_parallel_size", std::to_string(pipeline),
                           "a value such that tensor x pipeline (" + std::to_string(tensor * pipeline) +
                               ") divides the GPU count " + std::to_string(world_size));
  }
  return ParallelLayout{tensor, pipeline, world_size / (tensor * pipeline)};
}

std::vector<std::vector<std::int64_t>> groups(const ParallelLayout& layout, GroupKind kind) {
  std::vector<std::vector<std::int64_t>> out;
  const std::int64_t t = layout.tensor, d = layout.data, p = layout.pipeline;
  switch (kind) {
    case GroupKind::kTensor:
      for (std::int64_t pp = 0; pp < p; ++pp)
        for (std::int64_t dp = 0; dp < d; ++dp) {
          auto& g = out.emplace_back();
          for (std::int64_t tp = 0; tp < t; ++tp) g.push_back(layout.rank_of(tp, dp, pp));
        }
      break;
    case GroupKind::kData:
      for (std::int64_t pp = 0; pp < p; ++pp)
        for (std::int64_t tp = 0; tp < t; ++tp) {
          auto& g = out.emplace_back();
          for (std::int64_t dp = 0; dp < d; ++dp) g.push_back(layout.rank_of(tp, dp, pp));
        }
      break;
    case GroupKind::kPipeline:
      for (std::int64_t dp = 0; dp < d; ++dp)
        for (std::int64_t tp = 0; tp < t; ++tp) {
          auto& g = out.emplace_back();
          for (std::int64_t pp = 0; pp < p; ++pp) g.push_back(layout.rank_of(tp, dp, pp));
        }
      break;
  }
  return out;
}

}  // namespace megasim::models
