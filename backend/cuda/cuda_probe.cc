#include "backend/cuda/cuda_probe.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_job.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm_probe.h"
#include "backend/cuda/memory_probe.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/cuda/nccl_probe.h"
#include "backend/launch_env.h"
#include "models/gpu_spec.h"
#include "models/parallel_groups.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kCopyBytes = std::size_t{1} << 30;  // far beyond any L2
constexpr int kGapKernels = 2000;

// The GpuSpec the efficiencies are relative to: --gpu, or the device's own name.
const models::GpuSpec& gpu_spec(const GpuInfo& device, const std::string& gpu_name) {
  if (!gpu_name.empty()) return models::find_gpu(gpu_name, "--gpu");
  const models::GpuSpec* named = models::gpu_for_device_name(device.name);
  if (named == nullptr) {
    throw sim::ConfigError("--gpu", "(not given)",
                           "the GPU's name in gpus.csv: the device '" + device.name + "' is not one megasim knows");
  }
  return *named;
}

LinkMeasurements to_link_measurements(const NcclProbeResult& r, int repetitions) {
  LinkMeasurements m;
  m.ranks = r.hosts.world_size();
  m.hosts = r.hosts.host_count();
  m.ranks_per_host = r.hosts.ranks_per_host;
  m.repetitions = repetitions;
  for (const NcclPoint& p : r.points) m.points.push_back({p.link, p.op, p.ranks, p.bytes, p.seconds});
  return m;
}

// The probe of `device` (the current one), with `links` as its links.
GpuProbe gpu_probe(const GpuInfo& device, const ProbeOptions& o, std::function<LinkMeasurements()> links) {
  auto gemm = std::make_shared<GemmProbe>();
  // A wrong operand layout would time a different GEMM: check against a host reference first.
  const double layout_error = gemm->max_relative_error({96, 80, 112, 2});
  if (layout_error > 1.0 / 64) {
    throw CudaError("cuBLASLt GEMM differs from the host reference by " + std::to_string(layout_error) + " (relative)");
  }
  const int repetitions = o.repetitions;
  GpuProbe probe;
  probe.backend = "cuda";
  probe.device = device.name;
  probe.gpu = gpu_spec(device, o.gpu_name);
  probe.gemm_seconds = [gemm, repetitions](const models::GemmShape& s) {
    return gemm->median_seconds({s.m, s.n, s.k, s.batch}, repetitions);
  };
  // FP8 tensor cores from compute capability 8.9 (Ada, Hopper), where the spec has an FP8 peak;
  // the FP8 layout is checked against the host reference as the bf16 one above.
  const bool fp8 = device.compute_capability_major * 10 + device.compute_capability_minor >= 89;
  // A failure there leaves the bf16 calibration standing and says why FP8 was not measured.
  if (fp8 && probe.gpu.peak_fp8_dense_tflops > 0) {
    try {
      const double fp8_error = gemm->max_relative_error({96, 80, 112, 2, GemmOperands::kFp8E4m3});
      if (fp8_error > 1.0 / 64) {
        throw CudaError("cuBLASLt FP8 GEMM differs from the host reference by " + std::to_string(fp8_error) +
                        " (relative)");
      }
      probe.fp8_gemm_seconds = [gemm, repetitions](const models::GemmShape& s) {
        return gemm->median_seconds({s.m, s.n, s.k, s.batch, GemmOperands::kFp8E4m3}, repetitions);
      };
    } catch (const CudaError& e) {
      probe.fp8_not_measured = e.what();
    }
  }
  probe.copy_bytes_per_s = [repetitions] { return copy_bandwidth_bytes_per_s(kCopyBytes, repetitions); };
  probe.kernel_gap_s = [] { return back_to_back_kernel_seconds(kGapKernels); };
  probe.links = std::move(links);
  return probe;
}

// The job's size: the launcher's, else options.processes (default 1).
int job_size(const ProbeOptions& o, int visible) {
  const std::optional<LaunchedRank> launched = launched_rank();
  if (launched && launched->size > 1) {
    if (o.processes && *o.processes != launched->size) {
      throw sim::ConfigError("--gpus", std::to_string(*o.processes),
                             "the number of processes " + launched->launcher + " started (" +
                                 std::to_string(launched->size) + "), or leave --gpus out under a launcher");
    }
    return launched->size;
  }
  const int n = o.processes.value_or(1);
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

void run_gpu_probe(const ProbeOptions& o, const std::function<void(const GpuProbe&)>& on_rank_zero) {
  if (o.processes && *o.processes < 1) throw sim::ConfigError("--gpus", std::to_string(*o.processes), "at least 1");
  NcclProbeOptions nccl;
  nccl.max_bytes = o.nccl_max_bytes;
  nccl.repetitions = o.repetitions;
  validate(nccl);
  const std::vector<GpuInfo> gpus = visible_gpus();
  const int processes = job_size(o, static_cast<int>(gpus.size()));
  if (gpus.empty()) throw sim::ConfigError("--backend", "cuda", "a machine with a visible CUDA GPU (none found)");
  gpu_spec(gpus.front(), o.gpu_name);  // an unknown device is refused on every rank, before the job starts
  if (processes == 1) {
    on_rank_zero(gpu_probe(gpus.front(), o, nullptr));
    return;
  }
  run_cuda_job(processes, "--gpus", o.relaunch, o.file_exchange, [&](const CudaJobRank& rank) {
    const models::ParallelLayout layout{1, 1, processes};  // the world; the probe splits it by host
    NcclComms comms(layout, rank.me.rank, rank.me.size, rank.broadcast);
    if (rank.me.rank != 0) {
      measure_nccl_links(comms.world(), nccl);
      return;
    }
    auto links = [&] { return to_link_measurements(measure_nccl_links(comms.world(), nccl), nccl.repetitions); };
    on_rank_zero(gpu_probe(gpus.at(static_cast<std::size_t>(rank.gpu)), o, links));
  });
}

}  // namespace megasim::backend::cuda
