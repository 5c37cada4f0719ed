#include "scenarios/studies/memory_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "models/workload.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr double kBytesPerGpu = 8 * 1024;
constexpr double kBytesPerTaskRecord = 64;
constexpr double kBytesPerProgramTask = 256;
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

double per_gpu_bytes(bool record_flows) {
  return record_flows ? 2 * kBytesPerGpu : kBytesPerGpu;
}

void add_bytes(SimulationFootprint& f, bool record_flows) {
  f.bytes = kBaseBytes + per_gpu_bytes(record_flows) * static_cast<double>(f.gpus) +
            kBytesPerTaskRecord * static_cast<double>(f.task_records) +
            kBytesPerProgramTask * static_cast<double>(f.program_tasks);
}

}  // namespace

SimulationFootprint iteration_footprint(const models::Workload& workload, std::int64_t gpus, bool record_flows) {
  SimulationFootprint f;
  f.gpus = gpus;
  f.global_batch = workload.plan.plan.global_batch_size;
  const std::int64_t replicas = workload.plan.replicas();
  for (const models::StageProgram& stage : workload.stages) {
    f.program_tasks += static_cast<std::int64_t>(stage.tasks.size());
    f.task_records += replicas * static_cast<std::int64_t>(stage.tasks.size());
  }
  add_bytes(f, record_flows);
  return f;
}

SimulationFootprint planned_footprint(const models::ModelSpec& model, const models::ResolvedPlan& plan,
                                      std::int64_t gpus, bool record_flows) {
  SimulationFootprint f;
  f.gpus = gpus;
  f.global_batch = plan.plan.global_batch_size;
  // In doubles: the counts of a hostile plan pass 2^63 before they are refused.
  double program_tasks = 0;
  const bool syncs = plan.plan.batch_p2p_sync && !plan.plan.overlap_p2p_comm;
  const double forward_extras = (plan.plan.async_data_loading ? 0.0 : 1.0) +
                                (plan.plan.average_loss_per_micro_batch && plan.replicas() > 1 ? 1.0 : 0.0);
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    double buckets = 0;
    for (std::int64_t chunk = 0; chunk < plan.virtual_stages; ++chunk) {
      for (const models::DpGroup group : {models::DpGroup::kData, models::DpGroup::kExpertData}) {
        buckets += static_cast<double>(models::gradient_bucket_params(model, plan, stage, chunk, group).size());
      }
    }
    const double steps = 2.0 * static_cast<double>(plan.num_microbatches) * static_cast<double>(plan.virtual_stages);
    // Per compute step at most one send, one recv and (batch_p2p_sync) one host synchronisation;
    // a synchronous data loading and the loss all-reduce come with forwards only (half the steps).
    program_tasks += (3 + (syncs ? 1 : 0)) * steps + forward_extras * steps / 2 + 2 * buckets + 3;
  }
  const double records = program_tasks * static_cast<double>(plan.replicas());
  constexpr double kMost = 1e18;  // past any memory; keeps the counts in int64
  f.program_tasks = static_cast<std::int64_t>(std::min(program_tasks, kMost));
  f.task_records = static_cast<std::int64_t>(std::min(records, kMost));
  add_bytes(f, record_flows);
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
  if (f.task_records > kMaxTaskRecords) {
    throw sim::ConfigError(
        "plan.global_batch_size", std::to_string(f.global_batch),
        fmt::format("a batch whose simulation has at most {} task records (2^27; its run time grows with them): this "
                    "plan has {} ({} tasks in the stage programs, 2 x micro-batches x model chunks each, times the "
                    "replicas); fewer micro-batches per iteration (a smaller global batch or a larger micro-batch) fit",
                    kMaxTaskRecords, f.task_records, f.program_tasks));
  }
  const double needed = f.bytes * simulations;
  const double available = available_memory_bytes();
  if (needed <= available) return;
  const std::string what =
      simulations > 1 ? fmt::format("{} concurrent simulations of", simulations) : "a simulation of";
  const double task_bytes = kBytesPerTaskRecord * static_cast<double>(f.task_records) +
                            kBytesPerProgramTask * static_cast<double>(f.program_tasks);
  if (task_bytes > per_gpu_bytes(false) * static_cast<double>(f.gpus)) {
    throw sim::ConfigError(
        "plan.global_batch_size", std::to_string(f.global_batch),
        fmt::format("a batch this machine can simulate: {} {} GPUs with {} task records ({} tasks in the stage "
                    "programs, 2 x micro-batches x model chunks each) need{} about {:.1f} GB, and {:.1f} GB is "
                    "available; fewer micro-batches per iteration (a smaller global batch or a larger micro-batch) "
                    "fit",
                    what, f.gpus, f.task_records, f.program_tasks, simulations > 1 ? "" : "s", needed / kGB,
                    available / kGB));
  }
  const double per_gpu = (f.bytes - kBaseBytes) / static_cast<double>(std::max<std::int64_t>(1, f.gpus));
  throw sim::ConfigError(
      "cluster.gpus", std::to_string(f.gpus),
      fmt::format("a cluster this machine can simulate: {} {} GPUs ({} task records) need{} about {:.1f} GB, and "
                  "{:.1f} GB is available (about {:.1f} kB per GPU: at most about {} GPUs here)",
                  what, f.gpus, f.task_records, simulations > 1 ? "" : "s", needed / kGB, available / kGB,
                  per_gpu / 1e3,
                  static_cast<std::int64_t>(std::max(0.0, available / simulations - kBaseBytes) / per_gpu)));
}

}  // namespace megasim::scenarios
