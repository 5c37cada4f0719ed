#include "models/workload.h"

#include <span>

#include "models/flops.h"
#include "models/workload_internal.h"
#include "sim/error.h"

namespace megasim::models {

std::string_view to_string(StreamKind stream) {
  switch (stream) {
    case StreamKind::kCompute:
      return "compute";
    case StreamKind::kTp:
      return "tp";
    case StreamKind::kPp:
      return "pp";
    case StreamKind::kDp:
      return "dp";
  }
  return "unknown";
}

std::string_view to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::kCompute:
      return "compute";
    case TaskKind::kPpSend:
      return "pp_send";
    case TaskKind::kPpRecv:
      return "pp_recv";
    case TaskKind::kDpCollective:
      return "dp_collective";
  }
  return "unknown";
}

std::string_view to_string(TaskCategory category) {
  switch (category) {
    case TaskCategory::kForward:
      return "forward";
    case TaskCategory::kBackward:
      return "backward";
    case TaskCategory::kOptimizer:
      return "optimizer";
    case TaskCategory::kDataLoading:
      return "data_loading";
    case TaskCategory::kPipelineForward:
      return "pipeline_forward";
    case TaskCategory::kPipelineBackward:
      return "pipeline_backward";
    case TaskCategory::kGradientReduce:
      return "gradient_reduce";
    case TaskCategory::kParameterGather:
      return "parameter_gather";
    case TaskCategory::kHostSync:
      return "host_sync";
    case TaskCategory::kLossReduce:
      return "loss_reduce";
  }
  return "unknown";
}

double kernel_list_model_flops(const KernelList& kernels) {
  return sum_flops(std::span<const LayerOp>(kernels.ops).subspan(static_cast<std::size_t>(kernels.recompute_ops)));
}

double kernel_list_hardware_flops(const KernelList& kernels) {
  return sum_flops(kernels.ops);
}

namespace {

template <typename Flops>
double task_flops(const Workload& workload, const Task& task, Flops flops) {
  double total = 0;
  for (const Task::KernelRun& run : task.runs) {
    total += static_cast<double>(run.repeat) * flops(workload.kernels.at(static_cast<std::size_t>(run.kernels)));
  }
  return total;
}

}  // namespace

double task_model_flops(const Workload& workload, const Task& task) {
  return task_flops(workload, task, kernel_list_model_flops);
}

double task_hardware_flops(const Workload& workload, const Task& task) {
  return task_flops(workload, task, kernel_list_hardware_flops);
}

Workload build_workload(const ModelSpec& model, const ResolvedPlan& plan) {
  MEGASIM_ASSERT(plan.pp >= 1 && plan.virtual_stages >= 1 && plan.num_microbatches >= 1 &&
                     plan.chunk_layers(0, 0) >= 0 && plan.chunk_layers(plan.pp - 1, plan.virtual_stages - 1) >= 0 &&
                     plan.layers_per_stage >= plan.virtual_stages && plan.padded_vocab_size > 0,
                 "build_workload needs a plan from resolve_plan");
  Workload w;
  w.model = model;
  w.plan = plan;
  const workload_detail::KernelIds ids = workload_detail::add_kernel_lists(model, plan, w.kernels);
  w.stages.reserve(static_cast<std::size_t>(plan.pp));
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    w.stages.push_back(workload_detail::build_stage_program(model, plan, ids, stage));
  }
  const IterationFlops flops = iteration_flops(model, plan);
  w.model_flops = flops.model;
  w.hardware_flops = flops.hardware;
  w.model_flops_full_attention = flops.model_full_attention;
  return w;
}

}  // namespace megasim::models
