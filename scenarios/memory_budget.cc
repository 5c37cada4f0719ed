#include "scenarios/memory_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr double kBytesPerGpu = 8 * 1024;
constexpr double kBytesPerTaskRecord = 64;
constexpr double kBaseBytes = 64.0 * 1024 * 1024;
constexpr double kGB = 1e9;  // memory in reports is in decimal GB, as HBM capacities (gpus.csv)

// A field of /proc/self/status or /proc/meminfo in bytes ("Name:   1234 kB"); -1 when absent.
double proc_field_bytes(const char* file, const std::string& name) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    double kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

// What a soft limit leaves once `used` bytes are mapped; infinity when unlimited.
double limit_left(int resource, double used) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::numeric_limits<double>::infinity();
  }
  return std::max(0.0, static_cast<double>(limit.rlim_cur) - std::max(0.0, used));
}

}  // namespace

SimulationFootprint iteration_footprint(const models::Workload& workload, std::int64_t gpus, bool record_flows) {
  SimulationFootprint f;
  f.gpus = gpus;
  const std::int64_t replicas = workload.plan.dp;
  for (const models::StageProgram& stage : workload.stages) {
    f.task_records += replicas * static_cast<std::int64_t>(stage.tasks.size());
  }
  const double per_gpu = record_flows ? 2 * kBytesPerGpu : kBytesPerGpu;
  f.bytes =
      kBaseBytes + per_gpu * static_cast<double>(gpus) + kBytesPerTaskRecord * static_cast<double>(f.task_records);
  return f;
}

double available_memory_bytes() {
  double system = proc_field_bytes("/proc/meminfo", "MemAvailable");
  if (system < 0) system = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const double mapped = proc_field_bytes("/proc/self/status", "VmSize");
  const double data = proc_field_bytes("/proc/self/status", "VmData");
  return std::min({system, limit_left(RLIMIT_AS, mapped), limit_left(RLIMIT_DATA, data)});
}

void require_memory_for(const SimulationFootprint& f, int simulations) {
  const double needed = f.bytes * simulations;
  const double available = available_memory_bytes();
  if (needed <= available) return;
  const double per_gpu = (f.bytes - kBaseBytes) / static_cast<double>(std::max<std::int64_t>(1, f.gpus));
  const std::string what =
      simulations > 1 ? fmt::format("{} concurrent simulations of", simulations) : "a simulation of";
  throw sim::ConfigError(
      "cluster.gpus", std::to_string(f.gpus),
      fmt::format("a cluster this machine can simulate: {} {} GPUs ({} task records) need{} about {:.1f} GB, and "
                  "{:.1f} GB is available (about {:.1f} kB per GPU: at most about {} GPUs here)",
                  what, f.gpus, f.task_records, simulations > 1 ? "" : "s", needed / kGB, available / kGB,
                  per_gpu / 1e3,
                  static_cast<std::int64_t>(std::max(0.0, available / simulations - kBaseBytes) / per_gpu)));
}

}  // namespace megasim::scenarios
