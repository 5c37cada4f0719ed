// A job of MPI processes for the real backends (cpu, cuda): a command that needs N processes and was
// started on its own re-executes itself under mpirun (mpi_launch.h); each rank then runs the body,
// and an exception on any rank ends the whole job instead of leaving the others waiting for it.
#pragma once

#include <cstdint>
#include <functional>

namespace megasim::backend::mpi {

// The command line to re-execute under mpirun, as main() received it.
struct CommandLine {
  int argc = 0;
  char** argv = nullptr;
};

// Throws sim::ConfigError("cluster.gpus") when a job of `processes` would be started on this machine
// (no launcher) with more than 4 processes per hardware thread.
void require_local_job(std::int64_t processes);

// Runs `body` as one rank of a job of `processes` MPI processes: re-executes `command` under mpirun
// first when this process was not started by a launcher (and processes > 1). An exception on any
// rank is printed with the rank and ends the whole job (MPI_Abort with the exit code the CLI uses
// for it: 2 for bad input, 1 otherwise); in a job of one process it propagates. `body` receives the
// world rank. Throws sim::ConfigError("cluster.gpus") when the launcher started another number of
// processes.
void run_as_mpi_job(std::int64_t processes, const CommandLine& command, const std::function<void(int rank)>& body);

}  // namespace megasim::backend::mpi
