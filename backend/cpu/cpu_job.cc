#include "backend/cpu/cpu_job.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/mpi/mpi_job.h"

namespace megasim::backend::cpu {
namespace {

class CpuJobBackend final : public Backend {
 public:
  [[nodiscard]] BackendId id() const override { return BackendId::kCpu; }

  void run(const models::Workload& workload, const MeasureOptions& options,
           const std::function<void(const std::vector<Trace>&)>& on_rank_zero) const override {
    mpi::run_as_mpi_job(workload.plan.world_size, options.relaunch, [&](int rank) {
      CpuRunOptions run;
      run.warmup_iterations = options.warmup_iterations;
      run.iterations = options.iterations;
      run.timeout = options.timeout;
      if (options.make_before_iteration) run.before_iteration = options.make_before_iteration();
      const std::vector<Trace> traces = run_cpu_iterations(workload, run);
      if (rank == 0) on_rank_zero(traces);
    });
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuJobBackend>();
}

}  // namespace megasim::backend::cpu
