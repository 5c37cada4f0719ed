// `megasim calibrate --backend cuda|cpu [SCENARIO] [--gpu NAME] [--out FILE] [--json]`: measures the
// cost model's inputs on this machine's GPU (scenarios/calibrate_study.h) or CPU cores
// (scenarios/cpu_calibration.h, as many MPI ranks as the plan has) and writes a calibration file.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/cpu_runs.h"
#include "cli/scenario_options.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models/plan.h"
#include "scenarios/calibrate_study.h"
#include "scenarios/cpu_calibration.h"
#include "sim/error.h"

#ifdef MEGASIM_HAS_CUDA
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm_probe.h"
#include "backend/cuda/memory_probe.h"
#endif

namespace megasim::cli {
namespace {

struct CalibrateOptions {
  ScenarioOptions scenario;
  std::string backend = "cuda";
  std::string gpu;
  std::string out_file;
  bool json = false;
  std::optional<int> repetitions;  // default: 20 on a GPU, 5 on the CPU (its kernels are slower)
};

// Measured on every rank of the plan's job at once; rank 0 prints and writes.
void run_calibrate_cpu(const CalibrateOptions& o) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  require_local_job(plan.world_size);
  // The kernels allocate the plan's operands: a plan that cannot fit in this machine's memory is
  // refused before any process starts.
  models::GpuSpec host;
  host.name = "this machine's memory per rank";
  host.hbm_gbytes = host_memory_gbytes() / static_cast<double>(plan.world_size);
  models::require_fits(models::estimate_memory(s.model, plan), host);
  run_as_mpi_job(plan.world_size, [&](int rank) {
    const scenarios::CpuCalibrationReport report = measure_cpu_calibration(s, o.repetitions.value_or(5));
    if (rank != 0) return;
    const std::string text = o.json ? scenarios::to_json(report) : scenarios::to_text(report);
    if (!o.out_file.empty()) write_file(o.out_file, scenarios::to_calibration_toml(report), "--out");
    std::cout << text << std::flush;
  });
}

#ifdef MEGASIM_HAS_CUDA
scenarios::CalibrationReport calibrate_cuda(const scenarios::Scenario& scenario, const CalibrateOptions& o) {
  const std::vector<backend::cuda::GpuInfo> gpus = backend::cuda::visible_gpus();
  if (gpus.empty()) throw sim::ConfigError("--backend", o.backend, "a machine with a visible CUDA GPU (none found)");
  const models::GpuSpec* named = o.gpu.empty() ? models::gpu_for_device_name(gpus.front().name) : nullptr;
  if (o.gpu.empty() && named == nullptr) {
    throw sim::ConfigError(
        "--gpu", "(not given)",
        "the GPU's name in gpus.csv: the device '" + gpus.front().name + "' is not one megasim knows");
  }
  const models::GpuSpec& gpu = named != nullptr ? *named : models::find_gpu(o.gpu, "--gpu");

  auto gemm = std::make_shared<backend::cuda::GemmProbe>();
  // A wrong operand layout would time a different GEMM: check against a host reference first.
  const double layout_error = gemm->max_relative_error({96, 80, 112, 2});
  if (layout_error > 1.0 / 64) {
    throw backend::cuda::CudaError("cuBLASLt GEMM differs from the host reference by " + std::to_string(layout_error) +
                                   " (relative)");
  }
  constexpr std::size_t kCopyBytes = std::size_t{1} << 30;  // far beyond any L2
  constexpr int kGapKernels = 2000;
  scenarios::CalibrationProbe probe;
  probe.backend = "cuda";
  probe.device = gpus.front().name;
  probe.gemm_seconds = [gemm, reps = o.repetitions](const models::GemmShape& s) {
    return gemm->median_seconds({s.m, s.n, s.k, s.batch}, reps.value_or(20));
  };
  probe.copy_bytes_per_s = [reps = o.repetitions] {
    return backend::cuda::copy_bandwidth_bytes_per_s(kCopyBytes, reps.value_or(20));
  };
  probe.kernel_gap_s = [] { return backend::cuda::back_to_back_kernel_seconds(kGapKernels); };
  return scenarios::run_calibration(scenario, gpu, probe);
}
#endif

void run_calibrate(const CalibrateOptions& o) {
  if (o.repetitions && *o.repetitions < 1) {
    throw sim::ConfigError("--repetitions", std::to_string(*o.repetitions), "at least 1");
  }
  // Refused before any GPU time is spent on measurements that could not be written.
  if (!o.out_file.empty()) {
    const std::filesystem::path folder = std::filesystem::absolute(o.out_file).parent_path();
    if (!std::filesystem::is_directory(folder)) {
      throw sim::ConfigError("--out", o.out_file, "a file in an existing folder");
    }
  }
  if (o.backend == "cpu") {
    run_calibrate_cpu(o);
    return;
  }
#ifdef MEGASIM_HAS_CUDA
  if (o.backend != "cuda") throw sim::ConfigError("--backend", o.backend, "cpu or cuda");
  const scenarios::Scenario scenario = resolve_scenario(o.scenario);
  const scenarios::CalibrationReport report = calibrate_cuda(scenario, o);
  // Rendered before anything is written, so a failure leaves no partial output.
  const std::string text = o.json ? scenarios::to_json(report) : scenarios::to_text(report);
  if (!o.out_file.empty()) write_file(o.out_file, scenarios::to_calibration_toml(report), "--out");
  std::cout << text;
#else
  throw sim::ConfigError("--backend", o.backend,
                         "cpu (cuda is not built into this megasim: it was configured with MEGASIM_WITH_CUDA=OFF, "
                         "or CUDA and NCCL were not found); see `megasim backends`");
#endif
}

}  // namespace

Action register_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate",
                                     "measure GEMM efficiency, memory bandwidth (and on the CPU, MPI links) on this "
                                     "machine and write a calibration file");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--backend", o->backend, "the real backend that measures: cuda (default) or cpu");
  cmd->add_option("--gpu", o->gpu, "the GPU's name in gpus.csv (default: from the device's name)");
  cmd->add_option("--out", o->out_file, "write the calibration file (TOML) here");
  cmd->add_option("--repetitions", o->repetitions, "timed runs per measurement (the median is kept)");
  cmd->add_flag("--json", o->json, "print one JSON object");
  return [cmd, o] {
    if (cmd->parsed()) run_calibrate(*o);
  };
}

}  // namespace megasim::cli
