#include "backend/real_backend_scope.h"

#include <fmt/format.h>

#include <string>

#include "sim/error.h"

namespace megasim::backend {

void require_real_backend_groups(const models::Workload& workload, std::string_view backend) {
  const models::ResolvedPlan& plan = workload.plan;
  if (plan.cp != 1) {
    throw sim::ConfigError("plan.context_parallel_size", std::to_string(plan.cp),
                           fmt::format("1 on the {} backend, whose communicators are the tensor, pipeline and "
                                       "data-parallel groups (context parallelism runs on the sim backend)",
                                       backend));
  }
  require_real_backend_kernels(workload, backend);
  if (plan.ep != 1) {
    throw sim::ConfigError("plan.expert_model_parallel_size", std::to_string(plan.ep),
                           fmt::format("1 on the {} backend, whose communicators are the tensor, pipeline and "
                                       "data-parallel groups (expert parallelism runs on the sim backend)",
                                       backend));
  }
  if (plan.etp != plan.tp) {
    throw sim::ConfigError("plan.expert_tensor_parallel_size", std::to_string(plan.etp),
                           fmt::format("0 (the tensor-parallel size {}) on the {} backend, whose communicators are "
                                       "the tensor, pipeline and data-parallel groups",
                                       plan.tp, backend));
  }
}

void require_real_backend_kernels(const models::Workload& workload, std::string_view backend) {
  const models::ParallelPlan& plan = workload.plan.plan;
  if (models::uses_fp8(plan)) {
    throw sim::ConfigError("plan.fp8", std::string(models::to_string(plan.fp8)),
                           fmt::format("none on the {} backend, whose GEMMs run in BF16 (FP8 is modelled by the sim "
                                       "backend)",
                                       backend));
  }
}

}  // namespace megasim::backend
