// The cpu backend from the command line: the MPI job a command needs (started here under mpirun
// when the command was run on its own, backend/mpi/mpi_launch.h), and the measurements of
// `calibrate --backend cpu` on every rank of it (cli/cpu_probe.h).
#pragma once

#include <cstdint>
#include <functional>

#include "scenarios/cpu_calibration.h"
#include "scenarios/scenario.h"

namespace megasim::cli {

// The command line as main() received it (commands that re-execute themselves under mpirun).
struct ProcessArgs {
  int argc = 0;
  char** argv = nullptr;
};
ProcessArgs& process_args();

// This machine's physical memory, GB (1e9 bytes).
double host_memory_gbytes();

// Throws sim::ConfigError before any process starts when the scenario's plan cannot run as a job on
// this machine: backend::mpi::require_local_job of its world size, and models::require_fits against this machine's
// memory per rank (the kernels allocate the plan's operands).
void require_cpu_job_fits(const scenarios::Scenario& scenario);

// backend::mpi::run_as_mpi_job (backend/mpi/mpi_job.h) re-executing this command (process_args()).
void run_as_mpi_job(std::int64_t processes, const std::function<void(int rank)>& body);

// The measurements of scenarios/cpu_calibration.h, taken on every rank at once (call inside
// run_as_mpi_job on all ranks); the report is complete on every rank (rank 0's numbers).
scenarios::CpuCalibrationReport measure_cpu_calibration(const scenarios::Scenario& scenario, int repetitions);

}  // namespace megasim::cli
