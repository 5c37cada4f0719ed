// Megatron-LM's process groups for a (tensor, data, pipeline) split, in Megatron's default rank
// order tp-dp-pp: tensor parallelism innermost, then data, then pipeline, so
//   rank = tp_rank + tp * (dp_rank + dp * pp_rank).
// With TP dividing the server size and ranks placed on GPUs in order, a TP group is inside one
// server and a DP group holds one GPU of the same local index from each of dp consecutive servers.
#pragma once

#include <cstdint>
#include <vector>

namespace megasim::models {

struct ParallelLayout {
  std::int64_t tensor = 1;    // tensor_model_parallel_size
  std::int64_t pipeline = 1;  // pipeline_model_parallel_size
  std::int64_t data = 1;      // data parallel size (derived: world / (tensor * pipeline))

  [[nodiscard]] std::int64_t world_size() const { return tensor * pipeline * data; }
  [[nodiscard]] std::int64_t rank_of(std::int64_t tp_rank, std::int64_t dp_rank, std::int64_t pp_rank) const {
    return tp_rank + tensor * (dp_rank + data * pp_rank);
  }
  [[nodiscard]] std::int64_t tp_rank(std::int64_t rank) const { return rank % tensor; }
  [[nodiscard]] std::int64_t dp_rank(std::int64_t rank) const { return (rank / tensor) % data; }
  [[nodiscard]] std::int64_t pp_rank(std::int64_t rank) const { return rank / (tensor * data); }
};

// Derives the data-parallel size from the world size; throws sim::ConfigError naming
// "plan.tensor_model_parallel_size" / "plan.pipeline_model_parallel_size" when tp*pp does not divide
// the world size or a size is < 1.
ParallelLayout make_layout(std::int64_t world_size, std::int64_t tensor, std::int64_t pipeline);

// The experts' groups of Megatron core's MoE parallel folding (parallel_state.py, order
// tp-ep-dp-pp for the expert layers): within a pipeline stage, the stage's tp x dp ranks (index
// i = tp_rank + tp * dp_rank) are split as i = etp_rank + etp * (ep_rank + ep * edp_rank). An
// expert-parallel group varies ep_rank, an expert-tensor group etp_rank, an expert-data-parallel
// group edp_rank. etp * ep divides tp * dp (resolve_plan checks).
struct ExpertLayout {
  ParallelLayout dense;
  std::int64_t expert_tensor = 1;  // expert_tensor_parallel_size
  std::int64_t expert = 1;         // expert_model_parallel_size

  [[nodiscard]] std::int64_t expert_data() const { return dense.tensor * dense.data / (expert_tensor * expert); }
  // The ranks of `rank`'s expert-parallel, expert-tensor or expert-data-parallel group, in the
  // order of the varying index.
  [[nodiscard]] std::vector<std::int64_t> expert_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> expert_tensor_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> expert_data_group(std::int64_t rank) const;
  // Varying etp_rank and ep_rank together: the etp x ep consecutive expert indices around `rank`.
  [[nodiscard]] std::vector<std::int64_t> expert_tensor_and_expert_group(std::int64_t rank) const;
};

enum class GroupKind : std::uint8_t { kTensor, kData, kPipeline };

// Every group of a kind, each listing its ranks in increasing order; groups are ordered by their
// smallest rank. There are dp*pp tensor groups of size tp, tp*pp data groups of size dp and tp*dp pipeline groups of
// size pp.
std::vector<std::vector<std::int64_t>> groups(const ParallelLayout& layout, GroupKind kind);

}  // namespace megasim::models
