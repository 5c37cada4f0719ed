// Durations of compute tasks: kernel-list times from the cost model (models/op_time.h) or the
// caller's table, scaled by the unit's slowdown, plus the TP collectives no GEMM hides.
#include <algorithm>

#include "backend/sim/executor_impl.h"
#include "models/op_time.h"
#include "sim/error.h"

namespace megasim::backend::detail {
namespace {

constexpr std::string_view kTaskTime =
    "a compute task's duration (check the model's size, the GPU, the calibration's efficiencies and the straggler "
    "factors)";

// Time a list's overlappable TP collectives (models::TpCollective::overlappable, C seconds alone) add
// to its GEMMs (W seconds alone). While a collective runs, its NCCL kernels hold a fraction f of the
// SMs, so the GEMMs beside it run at (1 - f): if they outlast it, the list takes W + f·C; if not
// (C·(1 - f) > W), it takes C. Either way the cost is max(f·C, C - W) >= 0. Ring attention's
// transfers are the same against the attention blocks beside them (W = those blocks' time).
double overlapped_tp_cost(double overlappable_s, double gemm_s, double comm_sm_fraction) {
  return std::max(comm_sm_fraction * overlappable_s, overlappable_s - gemm_s);
}

}  // namespace

std::vector<KernelCost> kernel_costs(const IterationInputs& in) {
  const models::Workload& w = *in.workload;
  std::vector<KernelCost> out(w.kernels.size());
  for (std::size_t i = 0; i < w.kernels.size(); ++i) {
    if (!in.kernel_times.empty()) {
      out[i] = {in.kernel_times[i].compute_s, in.kernel_times[i].gemm_s, in.kernel_times[i].ring_attention_s};
      continue;
    }
    out[i].compute_s = models::kernel_list_compute_time_s(w.kernels[i], w.plan.plan, in.gpu, in.calibration);
    out[i].gemm_s = models::kernel_list_gemm_time_s(w.kernels[i], w.plan.plan, in.gpu, in.calibration);
    out[i].ring_attention_s =
        models::kernel_list_ring_attention_window_s(w.kernels[i], w.plan.plan, in.gpu, in.calibration);
  }
  return out;
}

TaskTimes task_times(const models::StageProgram& program, const std::vector<KernelCost>& costs,
                     const std::vector<TpTime>& tp, double slowdown, const std::vector<float>* scale,
                     const models::ComputeCalibration& calibration) {
  const double comm_sm_fraction = calibration.comm_sm_fraction;
  const double sync_gap = static_cast<double>(calibration.host_sync_gap_ns) * 1e-9;
  const double get_batch = static_cast<double>(calibration.get_batch_host_ns) * 1e-9;
  TaskTimes out;
  out.duration.assign(program.tasks.size(), 0);
  out.tp_exposed.assign(program.tasks.size(), 0);
  for (std::size_t t = 0; t < program.tasks.size(); ++t) {
    const models::Task& task = program.tasks[t];
    if (task.kind != models::TaskKind::kCompute) continue;
    double compute = 0;
    double exposed = 0;
    const double task_slowdown = slowdown * (scale != nullptr ? static_cast<double>((*scale)[t]) : 1.0);
    for (const models::Task::KernelRun& run : task.runs) {
      MEGASIM_ASSERT(run.kernels >= 0 && static_cast<std::size_t>(run.kernels) < costs.size(),
                     "a compute task names an unknown kernel list");
      const auto k = static_cast<std::size_t>(run.kernels);
      const double repeat = static_cast<double>(run.repeat);
      compute += repeat * costs[k].compute_s * task_slowdown;
      exposed +=
          repeat *
          (tp[k].plain_s + overlapped_tp_cost(tp[k].overlappable_s, costs[k].gemm_s * task_slowdown, comm_sm_fraction) +
           overlapped_tp_cost(tp[k].ring_attention_s, costs[k].ring_attention_s * task_slowdown, comm_sm_fraction));
    }
    double host = 0;
    if (task.host_sync) host = sync_gap + (task.category == models::TaskCategory::kDataLoading ? get_batch : 0);
    out.duration[t] = sim::from_seconds(host + compute + exposed, kTaskTime);
    out.tp_exposed[t] = sim::from_seconds(exposed, kTaskTime);
  }
  return out;
}

}  // namespace megasim::backend::detail
