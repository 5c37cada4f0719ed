#include "backend/registry.h"

#include <thread>

#include "backend/backend.h"
#include "sim/error.h"

#ifdef MEGASIM_HAS_MPI
#include <mpi.h>

#include "backend/cpu/cpu_job.h"
#endif

#ifdef MEGASIM_HAS_CUDA
#include "backend/cuda/cuda_job.h"
#include "backend/cuda/device_info.h"
#endif

namespace megasim::backend {
namespace {

std::string name_of(BackendId id) {
  for (const BackendDescription& d : known_backends()) {
    if (d.id == id) return d.name;
  }
  return "an unknown backend";
}

}  // namespace

std::vector<BackendDescription> describe_backends() {
  std::vector<BackendDescription> all = known_backends();
  for (BackendDescription& d : all) {
    static_cast<void>(d);  // a simulator-only build has nothing to add
#ifdef MEGASIM_HAS_MPI
    if (d.id == BackendId::kCpu) {
      int major = 0;
      int minor = 0;
      MPI_Get_version(&major, &minor);  // callable before MPI_Init
      d.mpi = "MPI " + std::to_string(major) + "." + std::to_string(minor);
      d.hardware_threads = static_cast<std::int64_t>(std::thread::hardware_concurrency());
      d.summary = "Eigen float32 kernels + " + d.mpi + " between processes";
    }
#endif
#ifdef MEGASIM_HAS_CUDA
    if (d.id == BackendId::kCuda) {
      try {
        d.nccl = cuda::nccl_version();
      } catch (const cuda::CudaError& e) {
        d.nccl = std::string("not loadable: ") + e.what();
      }
      for (const cuda::GpuInfo& g : cuda::visible_gpus()) {
        d.gpus.push_back({g.ordinal, g.name, g.memory_gbytes, g.multiprocessors, g.compute_capability_major,
                          g.compute_capability_minor});
      }
    }
#endif
  }
  return all;
}

std::vector<Trace> Backend::run_stage(const models::Workload& /*workload*/, std::int64_t stage, int /*warmup*/,
                                      int /*iterations*/) const {
  throw sim::ConfigError("--stage", std::to_string(stage), "no stage: only the cuda backend has shard mode");
}

void Backend::require_job_fits(const models::Workload& /*workload*/, const models::MemoryEstimate& /*memory*/) const {}

void Backend::probe_gpu(const ProbeOptions& /*options*/,
                        const std::function<void(const GpuProbe&)>& /*on_rank_zero*/) const {
  throw sim::ConfigError("--backend", name_of(id()), "cuda: only the cuda backend measures a GPU");
}

void Backend::probe_cpu(const models::Workload& /*workload*/, const ProbeOptions& /*options*/,
                        const std::function<void(const CpuProbe&, int rank)>& /*body*/) const {
  throw sim::ConfigError("--backend", name_of(id()), "cpu: only the cpu backend probes the cpu backend");
}

std::unique_ptr<Backend> make_backend(BackendId id) {
  switch (id) {
    case BackendId::kCpu:
#ifdef MEGASIM_HAS_MPI
      return cpu::make_cpu_backend();
#else
      static_cast<void>(backend_for("cpu", Capability::kRun));  // throws: not built
      break;
#endif
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
