// What the real backends (cpu, cuda) can run: their communicators are the tensor, pipeline and
// data-parallel groups of the plan, so an MoE plan whose experts need groups of their own (expert
// parallelism, or expert tensor parallelism other than the tensor-parallel size) runs on the sim
// backend only, as do context parallelism and FP8 (their GEMMs run in BF16). MoE layers whose
// experts live whole on every TP group (ep 1, etp = tp) run for real.
#pragma once

#include <string_view>

#include "models/workload.h"

namespace megasim::backend {

// Throws sim::ConfigError naming plan.fp8, plan.context_parallel_size, plan.expert_model_parallel_size or
// plan.expert_tensor_parallel_size when `workload` needs those groups or kernels; `backend` names
// the backend.
void require_real_backend_groups(const models::Workload& workload, std::string_view backend);

// The kernels alone, for runs of one rank's compute (the cuda backend's shard mode): throws
// sim::ConfigError naming plan.fp8 when the plan's GEMMs are FP8, which the real kernels run in BF16.
void require_real_backend_kernels(const models::Workload& workload, std::string_view backend);

}  // namespace megasim::backend
