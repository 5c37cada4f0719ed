#include "backend/sim/compute_groups.h"

#include <algorithm>
#include <map>

namespace megasim::backend {

const std::vector<topo::GpuId>& ComputeGroupGpus::of(models::ComputeGroup group) const {
  switch (group) {
    case models::ComputeGroup::kExpert:
      return expert;
    case models::ComputeGroup::kExpertTensor:
      return expert_tensor;
    case models::ComputeGroup::kExpertTensorAndExpert:
      return expert_tensor_and_expert;
    case models::ComputeGroup::kContext:
      return context;
    case models::ComputeGroup::kTensor:
      break;
  }
  return tensor;
}

ComputeGroupGpus compute_groups(const models::Workload& workload, const std::vector<topo::GpuId>& placement,
                                const std::vector<topo::GpuId>& tensor, std::int64_t stage, std::int64_t replica,
                                std::int64_t tp_rank) {
  ComputeGroupGpus out;
  out.tensor = tensor;
  const models::ExpertLayout layout = workload.plan.expert_layout();
  const std::int64_t rank = layout.dense.rank_of(tp_rank, replica, stage);
  const auto gpus_of = [&](const std::vector<std::int64_t>& ranks) {
    std::vector<topo::GpuId> gpus;
    for (const std::int64_t r : ranks) gpus.push_back(placement[static_cast<std::size_t>(r)]);
    return gpus;
  };
  // The CP group: the cp consecutive replicas (layout data indices) holding this one.
  const std::int64_t cp = workload.plan.cp;
  for (std::int64_t c = replica / cp * cp; c < replica / cp * cp + cp && cp > 1; ++c) {
    out.context.push_back(placement[static_cast<std::size_t>(layout.dense.rank_of(tp_rank, c, stage))]);
  }
  if (workload.plan.ep * workload.plan.etp == 1) return out;
  out.expert = gpus_of(layout.expert_group(rank));
  out.expert_tensor = gpus_of(layout.expert_tensor_group(rank));
  out.expert_tensor_and_expert = gpus_of(layout.expert_tensor_and_expert_group(rank));
  return out;
}

std::vector<std::vector<topo::GpuId>> stage_groups(const models::Workload& workload,
                                                   const std::vector<topo::GpuId>& placement, std::int64_t stage,
                                                   models::ComputeGroup group) {
  if (group == models::ComputeGroup::kTensor) return {};
  const models::ParallelLayout layout = workload.plan.layout();
  std::map<std::int32_t, std::vector<topo::GpuId>> by_first;  // groups are disjoint: the first GPU names one
  for (std::int64_t d = 0; d < layout.data; ++d) {
    for (std::int64_t t = 0; t < layout.tensor; ++t) {
      std::vector<topo::GpuId> gpus = compute_groups(workload, placement, {}, stage, d, t).of(group);
      if (gpus.size() < 2) continue;
      const std::int32_t first = std::min_element(gpus.begin(), gpus.end())->value;
      by_first.try_emplace(first, std::move(gpus));
    }
  }
  std::vector<std::vector<topo::GpuId>> out;
  out.reserve(by_first.size());
  for (auto& [first, gpus] : by_first) out.push_back(std::move(gpus));
  return out;
}

}  // namespace megasim::backend
