#include "backend/mpi/mpi_job.h"

#include <mpi.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <thread>

#include "backend/mpi/mpi_launch.h"
#include "backend/mpi/mpi_session.h"
#include "sim/error.h"

namespace megasim::backend::mpi {

void require_local_job(std::int64_t processes) {
  if (processes <= 1 || started_by_mpi_launcher()) return;
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

void run_as_mpi_job(std::int64_t processes, const CommandLine& command, const std::function<void(int rank)>& body) {
  require_local_job(processes);
  if (processes > 1 && !started_by_mpi_launcher()) {
    exec_under_mpirun(static_cast<int>(processes), command.argc, command.argv);
  }
  MpiSession session(nullptr, nullptr);
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

}  // namespace megasim::backend::mpi
