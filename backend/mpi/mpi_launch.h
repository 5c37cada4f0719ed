// Starting the real backends' processes: a command that needs N MPI processes and was started on
// its own re-executes itself under `mpirun` (Open MPI) with N processes.
#pragma once

#include <string>
#include <vector>

namespace megasim::backend::mpi {

// Whether this process was started by an MPI launcher (mpirun/mpiexec of Open MPI, MPICH's Hydra,
// or srun): OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_NTASKS in the environment.
[[nodiscard]] bool started_by_mpi_launcher();

// The physical cores this process may run on: the distinct (package, core) pairs of the CPUs in its
// affinity mask (sysfs topology; a CPU without it counts as its own core); at least 1.
[[nodiscard]] int usable_cores();

// Placement of `processes` ranks on a machine with `cores` usable cores: one rank per core, each
// bound to it (`--map-by core --bind-to core`), when they fit, so that a rank keeps its core's
// caches and is not migrated onto its peer's core, as one rank per GPU does; else unbound
// (`--bind-to none`), the scheduler sharing the cores (binding would stack ranks on a core).
[[nodiscard]] std::vector<std::string> binding_arguments(int processes, int cores);

// The mpirun command line that runs `argv` (argv[0] replaced by this executable's path from
// /proc/self/exe) as `processes` processes on this machine: --oversubscribe (more processes than
// cores is allowed), --allow-run-as-root when running as root (CI), binding_arguments(processes,
// usable_cores()). The first word is $MEGASIM_MPIRUN when set and not empty, else "mpirun".
// Preconditions: processes >= 1, argc >= 1.
[[nodiscard]] std::vector<std::string> mpirun_command(int processes, int argc, char** argv);

// Replaces this process with mpirun_command(...) (execvp: a bare "mpirun" is looked up on the PATH).
// Returns only on failure, throwing sim::ConfigError("--backend", "cpu", "mpirun (Open MPI) on the
// PATH") when mpirun cannot be run.
[[noreturn]] void exec_under_mpirun(int processes, int argc, char** argv);

}  // namespace megasim::backend::mpi
