#include "cli/cuda_calibrate.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_job.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm_probe.h"
#include "backend/cuda/memory_probe.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/cuda/nccl_probe.h"
#include "backend/launch_env.h"
#include "cli/cpu_runs.h"
#include "cli/measure_options.h"
#include "models/gpu_spec.h"
#include "models/parallel_groups.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

constexpr int kDefaultRepetitions = 20;

// The GpuSpec the efficiencies are relative to: --gpu, or the device's own name.
const models::GpuSpec& gpu_spec(const backend::cuda::GpuInfo& device, const CudaCalibrateOptions& o) {
  if (!o.gpu.empty()) return models::find_gpu(o.gpu, "--gpu");
  const models::GpuSpec* named = models::gpu_for_device_name(device.name);
  if (named == nullptr) {
    throw sim::ConfigError("--gpu", "(not given)",
                           "the GPU's name in gpus.csv: the device '" + device.name + "' is not one megasim knows");
  }
  return *named;
}

scenarios::LinkMeasurements to_link_measurements(const backend::cuda::NcclProbeResult& r, int repetitions) {
  scenarios::LinkMeasurements m;
  m.ranks = r.hosts.world_size();
  m.hosts = r.hosts.host_count();
  m.ranks_per_host = r.hosts.ranks_per_host;
  m.repetitions = repetitions;
  for (const backend::cuda::NcclPoint& p : r.points) m.points.push_back({p.link, p.op, p.ranks, p.bytes, p.seconds});
  return m;
}

// The single-GPU measurements on `ordinal` (the current device), with `links` as the probe's links.
scenarios::CalibrationReport calibrate_gpu(const scenarios::Scenario& scenario, const CudaCalibrateOptions& o,
                                           const backend::cuda::GpuInfo& device,
                                           std::function<scenarios::LinkMeasurements()> links) {
  const models::GpuSpec& gpu = gpu_spec(device, o);
  auto gemm = std::make_shared<backend::cuda::GemmProbe>();
  // A wrong operand layout would time a different GEMM: check against a host reference first.
  const double layout_error = gemm->max_relative_error({96, 80, 112, 2});
  if (layout_error > 1.0 / 64) {
    throw backend::cuda::CudaError("cuBLASLt GEMM differs from the host reference by " + std::to_string(layout_error) +
                                   " (relative)");
  }
  constexpr std::size_t kCopyBytes = std::size_t{1} << 30;  // far beyond any L2
  constexpr int kGapKernels = 2000;
  const int repetitions = o.repetitions.value_or(kDefaultRepetitions);
  scenarios::CalibrationProbe probe;
  probe.backend = "cuda";
  probe.device = device.name;
  probe.gemm_seconds = [gemm, repetitions](const models::GemmShape& s) {
    return gemm->median_seconds({s.m, s.n, s.k, s.batch}, repetitions);
  };
  probe.copy_bytes_per_s = [repetitions] { return backend::cuda::copy_bandwidth_bytes_per_s(kCopyBytes, repetitions); };
  probe.kernel_gap_s = [] { return backend::cuda::back_to_back_kernel_seconds(kGapKernels); };
  probe.links = std::move(links);
  return scenarios::run_calibration(scenario, gpu, probe);
}

// The job's size: the launcher's, else --gpus (default 1).
int job_size(const CudaCalibrateOptions& o, int visible) {
  const std::optional<backend::LaunchedRank> launched = backend::launched_rank();
  if (launched && launched->size > 1) {
    if (o.gpus && *o.gpus != launched->size) {
      throw sim::ConfigError("--gpus", std::to_string(*o.gpus),
                             "the number of processes " + launched->launcher + " started (" +
                                 std::to_string(launched->size) + "), or leave --gpus out under a launcher");
    }
    return launched->size;
  }
  const int n = o.gpus.value_or(1);
  if (n > 1 && n > visible) {
    throw sim::ConfigError("--gpus", std::to_string(n),
                           "at most " + std::to_string(visible) + " (the GPUs visible on this machine" +
                               (visible == 0 ? ": none" : "") +
                               "); measure across machines by starting megasim under mpirun or srun, one process "
                               "per GPU");
  }
  return n;
}

}  // namespace

void run_cuda_calibration(const scenarios::Scenario& scenario, const CudaCalibrateOptions& o,
                          const std::function<void(const scenarios::CalibrationReport&)>& on_rank_zero) {
  if (o.gpus && *o.gpus < 1) throw sim::ConfigError("--gpus", std::to_string(*o.gpus), "at least 1");
  backend::cuda::NcclProbeOptions probe_options;
  probe_options.max_bytes = o.nccl_max_bytes;
  probe_options.repetitions = o.repetitions.value_or(kDefaultRepetitions);
  backend::cuda::validate(probe_options);
  const std::vector<backend::cuda::GpuInfo> gpus = backend::cuda::visible_gpus();
  const int processes = job_size(o, static_cast<int>(gpus.size()));
  if (gpus.empty()) throw sim::ConfigError("--backend", "cuda", "a machine with a visible CUDA GPU (none found)");
  gpu_spec(gpus.front(), o);  // an unknown device is refused on every rank, before the job starts
  if (processes == 1) {
    on_rank_zero(calibrate_gpu(scenario, o, gpus.front(), nullptr));
    return;
  }
  const backend::mpi::CommandLine relaunch{process_args().argc, process_args().argv};
  backend::cuda::run_cuda_job(
      processes, "--gpus", relaunch, nccl_id_file_exchange(), [&](const backend::cuda::CudaJobRank& rank) {
        const models::ParallelLayout layout{1, 1, processes};  // the world; the probe splits it by host
        backend::cuda::NcclComms comms(layout, rank.me.rank, rank.me.size, rank.broadcast);
        if (rank.me.rank != 0) {
          backend::cuda::measure_nccl_links(comms.world(), probe_options);
          return;
        }
        auto links = [&] {
          return to_link_measurements(backend::cuda::measure_nccl_links(comms.world(), probe_options),
                                      probe_options.repetitions);
        };
        on_rank_zero(calibrate_gpu(scenario, o, gpus.at(static_cast<std::size_t>(rank.gpu)), links));
      });
}

}  // namespace megasim::cli
