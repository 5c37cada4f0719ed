#include "cli/cpu_runs.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <thread>

#include "backend/cpu/mpi_launch.h"
#include "backend/cpu/mpi_session.h"
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

void require_local_job(std::int64_t processes) {
  if (processes <= 1 || backend::cpu::started_by_mpi_launcher()) return;
  // Started here, every process shares this machine: a few per hardware thread at most (more is a
  // plan meant for a cluster, which a launcher spreads over machines).
  const std::int64_t limit = 4 * std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  if (processes > limit) {
    throw sim::ConfigError("cluster.gpus", std::to_string(processes),
                           "at most " + std::to_string(limit) +
                               " ranks started on this machine (4 per hardware thread); start larger jobs with "
                               "mpirun or srun across machines");
  }
}

void require_cpu_job_fits(const scenarios::Scenario& s) {
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  require_local_job(plan.world_size);
  models::GpuSpec host;
  host.name = "this machine's memory per rank";
  host.hbm_gbytes = host_memory_gbytes() / static_cast<double>(plan.world_size);
  models::require_fits(models::estimate_memory(s.model, plan), host);
}

void run_as_mpi_job(std::int64_t processes, const std::function<void(int rank)>& body) {
  require_local_job(processes);
  if (processes > 1 && !backend::cpu::started_by_mpi_launcher()) {
    ProcessArgs& a = process_args();
    backend::cpu::exec_under_mpirun(static_cast<int>(processes), a.argc, a.argv);
  }
  backend::cpu::MpiSession session(nullptr, nullptr);
  if (session.size() != processes) {
    throw sim::ConfigError("cluster.gpus", std::to_string(processes),
                           "the number of MPI processes of the job (" + std::to_string(session.size()) + ")");
  }
  try {
    body(session.rank());
  } catch (const sim::ConfigError& e) {
    if (session.size() == 1) throw;
    std::cerr << "megasim: error on rank " << session.rank() << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  } catch (const std::exception& e) {
    if (session.size() == 1) throw;
    std::cerr << "megasim: internal error on rank " << session.rank() << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

scenarios::CpuCalibrationReport measure_cpu_calibration(const scenarios::Scenario& scenario, int repetitions) {
  CpuProbeSession session(scenario);
  return scenarios::run_cpu_calibration(scenario, session.probe(repetitions));
}

}  // namespace megasim::cli
