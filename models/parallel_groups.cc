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

namespace {

// The ranks of `rank`'s stage whose expert index i differs from rank's only in the digit of
// `stride` (1 for expert TP, etp for EP, etp * ep for expert DP), `size` of them.
std::vector<std::int64_t> vary_expert_digit(const ExpertLayout& layout, std::int64_t rank, std::int64_t stride,
                                            std::int64_t size) {
  const std::int64_t stage_ranks = layout.dense.tensor * layout.dense.data;
  const std::int64_t base = rank / stage_ranks * stage_ranks;
  const std::int64_t i = rank - base;
  const std::int64_t cleared = i - (i / stride % size) * stride;
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size));
  for (std::int64_t k = 0; k < size; ++k) out.push_back(base + cleared + k * stride);
  return out;
}

}  // namespace

std::vector<std::int64_t> ExpertLayout::expert_group(std::int64_t rank) const {
  return vary_expert_digit(*this, rank, expert_tensor, expert);
}

std::vector<std::int64_t> ExpertLayout::expert_tensor_group(std::int64_t rank) const {
  return vary_expert_digit(*this, rank, 1, expert_tensor);
}

std::vector<std::int64_t> ExpertLayout::expert_data_group(std::int64_t rank) const {
  return vary_expert_digit(*this, rank, expert_tensor * expert, expert_data());
}

std::vector<std::int64_t> ExpertLayout::expert_tensor_and_expert_group(std::int64_t rank) const {
  return vary_expert_digit(*this, rank, 1, expert_tensor * expert);
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
