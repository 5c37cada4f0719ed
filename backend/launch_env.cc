#include "backend/launch_env.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "sim/error.h"

namespace megasim::backend {
namespace {

struct LauncherNames {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

constexpr std::array<LauncherNames, 4> kLaunchers{{
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"MPICH/PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"RANK/WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
}};

// The whole value as a decimal integer in [lowest, int max], else a ConfigError naming the variable.
int parse_int(const char* name, const std::string& value, int lowest, const std::string& valid) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno != 0 || x < lowest ||
      x > std::numeric_limits<int>::max()) {
    throw sim::ConfigError(name, value, valid);
  }
  return static_cast<int>(x);
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before any thread starts
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchedRank> launched_rank(const EnvLookup& env) {
  for (const LauncherNames& names : kLaunchers) {
    const std::optional<std::string> rank = env(names.rank);
    const std::optional<std::string> size = env(names.size);
    if (!rank || !size) continue;
    LaunchedRank out;
    out.launcher = names.launcher;
    out.size = parse_int(names.size, *size, 1, "the job's process count, an integer >= 1");
    out.rank = parse_int(names.rank, *rank, 0,
                         "the process's rank, an integer from 0 to " + std::to_string(out.size - 1) + " (" +
                             names.size + " is " + *size + ")");
    if (out.rank >= out.size) {
      throw sim::ConfigError(
          names.rank, *rank,
          "an integer from 0 to " + std::to_string(out.size - 1) + " (" + names.size + " is " + *size + ")");
    }
    if (const std::optional<std::string> local = env(names.local_rank)) {
      out.local_rank = parse_int(names.local_rank, *local, 0, "the process's index on its node, an integer >= 0");
    }
    return out;
  }
  return std::nullopt;
}

int gpu_of(const LaunchedRank& rank, int gpus) {
  if (gpus < 1) throw sim::ConfigError("cluster.gpus", std::to_string(rank.size), "a machine with a visible GPU");
  if (rank.local_rank < 0) return rank.rank % gpus;
  if (rank.local_rank >= gpus) {
    throw sim::ConfigError("cluster.gpus", std::to_string(rank.size),
                           "at most " + std::to_string(gpus) + " processes on this node, one per visible GPU (" +
                               rank.launcher + " gave this process local rank " + std::to_string(rank.local_rank) +
                               ")");
  }
  return rank.local_rank;
}

}  // namespace megasim::backend
