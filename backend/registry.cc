#include "backend/registry.h"

#include <mpi.h>

#include <algorithm>
#include <thread>

#include "backend/backend.h"
#include "backend/cpu/cpu_job.h"
#include "sim/error.h"

#ifdef MEGASIM_HAS_CUDA
#include "backend/cuda/cuda_job.h"
#include "backend/cuda/device_info.h"
#endif

namespace megasim::backend {
namespace {

std::string_view capability_name(Capability c) {
  switch (c) {
    case Capability::kRun:
      return "run";
    case Capability::kCalibrate:
      return "calibrate";
    case Capability::kValidate:
      return "validate";
  }
  return "?";
}

BackendDescription sim_backend() {
  BackendDescription d;
  d.id = BackendId::kSim;
  d.name = "sim";
  d.built = true;
  d.label = "the simulator";
  d.summary = "the flow-level cluster simulator";
  d.capabilities = {Capability::kRun};
  d.commands = "run, plan, collective, topo";
  return d;
}

BackendDescription cpu_backend() {
  BackendDescription d;
  d.id = BackendId::kCpu;
  d.name = "cpu";
  d.built = true;
  d.label = "Eigen + MPI";
  int major = 0;
  int minor = 0;
  MPI_Get_version(&major, &minor);  // callable before MPI_Init
  d.mpi = "MPI " + std::to_string(major) + "." + std::to_string(minor);
  d.hardware_threads = static_cast<std::int64_t>(std::thread::hardware_concurrency());
  d.summary = "Eigen float32 kernels + " + d.mpi + " between processes";
  d.capabilities = {Capability::kRun, Capability::kCalibrate, Capability::kValidate};
  d.commands = "run, calibrate, validate";
  return d;
}

BackendDescription cuda_backend() {
  BackendDescription d;
  d.id = BackendId::kCuda;
  d.name = "cuda";
  d.label = "CUDA + NCCL";
  d.summary = "CUDA + NCCL";
  d.capabilities = {Capability::kRun, Capability::kCalibrate, Capability::kValidate};
  d.commands = "calibrate, validate, run";
#ifdef MEGASIM_HAS_CUDA
  d.built = true;
  try {
    d.nccl = cuda::nccl_version();
  } catch (const cuda::CudaError& e) {
    d.nccl = std::string("not loadable: ") + e.what();
  }
  for (const cuda::GpuInfo& g : cuda::visible_gpus()) {
    d.gpus.push_back({g.ordinal, g.name, g.memory_gbytes, g.multiprocessors, g.compute_capability_major,
                      g.compute_capability_minor});
  }
#else
  d.not_built = "configured with MEGASIM_WITH_CUDA=OFF, or CUDA and NCCL were not found";
#endif
  return d;
}

bool can(const BackendDescription& d, Capability what) {
  return std::find(d.capabilities.begin(), d.capabilities.end(), what) != d.capabilities.end();
}

// "a (label), b (label) or c (label)".
std::string listed(const std::vector<const BackendDescription*>& backends) {
  std::string out;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    if (i > 0) out += i + 1 == backends.size() ? " or " : ", ";
    out += backends[i]->name + " (" + backends[i]->label + ")";
  }
  return out;
}

}  // namespace

std::vector<BackendDescription> describe_backends() {
  return {sim_backend(), cuda_backend(), cpu_backend()};
}

BackendId backend_for(std::string_view name, Capability what) {
  // Not describe_backends(): asking for a backend must not probe the GPUs or load NCCL.
  const std::vector<BackendDescription> all = {sim_backend(), cpu_backend(), cuda_backend()};
  std::vector<const BackendDescription*> known_that_can;
  std::vector<const BackendDescription*> built_that_can;
  const BackendDescription* named = nullptr;
  for (const BackendDescription& d : all) {
    if (d.name == name) named = &d;
    if (!can(d, what)) continue;
    known_that_can.push_back(&d);
    if (d.built) built_that_can.push_back(&d);
  }
  if (named != nullptr && named->built && can(*named, what)) return named->id;
  const std::string action(capability_name(what));
  if (named == nullptr) throw sim::ConfigError("--backend", std::string(name), listed(known_that_can));
  if (!named->built) {
    throw sim::ConfigError("--backend", std::string(name),
                           listed(built_that_can) + ": this megasim was built without the " + named->name +
                               " backend (" + named->not_built + "; see `megasim backends`)");
  }
  throw sim::ConfigError("--backend", std::string(name),
                         listed(built_that_can) + ": the " + named->name + " backend cannot " + action);
}

std::vector<Trace> Backend::run_stage(const models::Workload& /*workload*/, std::int64_t stage, int /*warmup*/,
                                      int /*iterations*/) const {
  throw sim::ConfigError("--stage", std::to_string(stage), "no stage: only the cuda backend has shard mode");
}

std::unique_ptr<Backend> make_backend(BackendId id) {
  switch (id) {
    case BackendId::kCpu:
      return cpu::make_cpu_backend();
    case BackendId::kCuda:
#ifdef MEGASIM_HAS_CUDA
      return cuda::make_cuda_backend();
#else
      static_cast<void>(backend_for("cuda", Capability::kRun));  // throws: not built
      break;
#endif
    case BackendId::kSim:
      break;
  }
  throw sim::ConfigError("--backend", "sim",
                         "a backend that runs the workload for real (cpu or cuda): the simulator plays it through "
                         "the iteration study");
}

}  // namespace megasim::backend
