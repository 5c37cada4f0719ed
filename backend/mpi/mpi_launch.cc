#include "backend/mpi/mpi_launch.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.h"
#include "sim/executable_path.h"

namespace megasim::backend::mpi {

namespace {

// Set by Open MPI's mpirun, by PMI launchers (MPICH's Hydra), by PMIx launchers and by Slurm's srun.
constexpr std::array<const char*, 4> kLauncherVariables = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                                           "SLURM_NTASKS"};

// This executable's path, so that mpirun starts the same binary whatever the working directory or
// PATH; argv[0] when /proc is unavailable.
std::string self_path(const char* argv0) {
  return sim::executable_path().value_or(argv0);
}

std::string mpirun_program() {
  const char* chosen = std::getenv("MEGASIM_MPIRUN");
  return chosen != nullptr && *chosen != '\0' ? chosen : "mpirun";
}

// A sysfs topology number of `cpu` ("core_id", "physical_package_id"); -1 when unreadable.
int topology_id(int cpu, const char* name) {
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + name);
  int id = -1;
  if (!(in >> id)) return -1;
  return id;
}

}  // namespace

int usable_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return 1;
  std::set<std::pair<int, int>> cores;
  int alone = 0;  // CPUs without a topology: one core each
  for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    const int core = topology_id(static_cast<int>(cpu), "core_id");
    const int package = topology_id(static_cast<int>(cpu), "physical_package_id");
    if (core < 0 || package < 0) {
      ++alone;
    } else {
      cores.emplace(package, core);
    }
  }
  return std::max(1, static_cast<int>(cores.size()) + alone);
}

std::vector<std::string> binding_arguments(int processes, int cores) {
  if (processes <= cores) return {"--map-by", "core", "--bind-to", "core"};
  return {"--bind-to", "none"};
}

bool started_by_mpi_launcher() {
  for (const char* variable : kLauncherVariables) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

std::vector<std::string> mpirun_command(int processes, int argc, char** argv) {
  MEGASIM_ASSERT(processes >= 1, "an MPI job needs at least one process");
  MEGASIM_ASSERT(argc >= 1 && argv != nullptr && argv[0] != nullptr, "argv must hold the program name");
  std::vector<std::string> command = {mpirun_program(), "--oversubscribe"};
  // Open MPI refuses to start as root without it; CI containers run as root.
  if (geteuid() == 0) command.emplace_back("--allow-run-as-root");
  for (std::string& word : binding_arguments(processes, usable_cores())) command.push_back(std::move(word));
  command.insert(command.end(), {"-np", std::to_string(processes), self_path(argv[0])});
  for (int i = 1; i < argc; ++i) command.emplace_back(argv[i]);
  return command;
}

void exec_under_mpirun(int processes, int argc, char** argv) {
  std::vector<std::string> command = mpirun_command(processes, argc, argv);
  std::vector<char*> exec_argv;
  exec_argv.reserve(command.size() + 1);
  for (std::string& word : command) exec_argv.push_back(word.data());
  exec_argv.push_back(nullptr);
  // What stdio still buffers would be lost with this process image.
  std::fflush(nullptr);
  execvp(exec_argv[0], exec_argv.data());
  throw sim::ConfigError("--backend", "cpu", "mpirun (Open MPI) on the PATH");
}

}  // namespace megasim::backend::mpi
