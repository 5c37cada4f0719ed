#include "backend/cpu/cpu_job.h"

#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_probe.h"
#include "backend/cpu/host_machine.h"
#include "backend/mpi/mpi_job.h"
#include "backend/real_backend_scope.h"
#include "models/gpu_spec.h"

namespace megasim::backend::cpu {
namespace {

class CpuJobBackend final : public Backend {
 public:
  [[nodiscard]] BackendId id() const override { return BackendId::kCpu; }

  void require_job_fits(const models::Workload& workload, const models::MemoryEstimate& memory) const override {
    mpi::require_local_job(workload.plan.world_size);
    models::GpuSpec host;
    host.name = "this machine's memory per rank";
    host.hbm_gbytes = host_memory_gbytes() / static_cast<double>(workload.plan.world_size);
    models::require_fits(memory, host);
  }

  void run(const models::Workload& workload, const MeasureOptions& options,
           const std::function<void(const std::vector<Trace>&)>& on_rank_zero) const override {
    require_real_backend_groups(workload, "cpu");  // before any process starts
    mpi::run_as_mpi_job(workload.plan.world_size, options.relaunch, [&](int rank) {
      CpuRunOptions run;
      run.warmup_iterations = options.warmup_iterations;
      run.iterations = options.iterations;
      run.timeout = options.timeout;
      if (options.probe_before_iteration) {
        // Made inside the job and freed there with `run`: the session holds the rank's communicators.
        auto session = std::make_shared<CpuProbeSession>(workload);
        run.before_iteration = [session, &options](int iteration) {
          options.probe_before_iteration(iteration, session->probe(1));
        };
      }
      const std::vector<Trace> traces = run_cpu_iterations(workload, run);
      if (rank == 0) on_rank_zero(traces);
    });
  }

  void probe_cpu(const models::Workload& workload, const ProbeOptions& options,
                 const std::function<void(const CpuProbe&, int rank)>& body) const override {
    mpi::run_as_mpi_job(workload.plan.world_size, options.relaunch, [&](int rank) {
      CpuProbeSession session(workload);
      body(session.probe(options.repetitions), rank);
    });
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuJobBackend>();
}

}  // namespace megasim::backend::cpu
