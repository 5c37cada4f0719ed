#include "cli/cpu_runs.h"

#include <unistd.h>

#include "backend/mpi/mpi_job.h"
#include "cli/cpu_probe.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models/plan.h"
#include "sim/error.h"

namespace megasim::cli {

double host_memory_gbytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e9;
}

ProcessArgs& process_args() {
  static ProcessArgs args;
  return args;
}

void require_cpu_job_fits(const scenarios::Scenario& s) {
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  backend::mpi::require_local_job(plan.world_size);
  models::GpuSpec host;
  host.name = "this machine's memory per rank";
  host.hbm_gbytes = host_memory_gbytes() / static_cast<double>(plan.world_size);
  models::require_fits(models::estimate_memory(s.model, plan), host);
}

void run_as_mpi_job(std::int64_t processes, const std::function<void(int rank)>& body) {
  const ProcessArgs& a = process_args();
  backend::mpi::run_as_mpi_job(processes, {a.argc, a.argv}, body);
}

scenarios::CpuCalibrationReport measure_cpu_calibration(const scenarios::Scenario& scenario, int repetitions) {
  CpuProbeSession session(scenario);
  return scenarios::run_cpu_calibration(scenario, session.probe(repetitions));
}

}  // namespace megasim::cli
