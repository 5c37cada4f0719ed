// `megasim calibrate --backend cuda|cpu [SCENARIO] [--gpu NAME] [--gpus N] [--nccl-max-bytes SIZE]
// [--out FILE] [--json]`, or `megasim calibrate --measured FILE.csv [SCENARIO] ...` (fits the cost
// model to measured runs instead, cli/calibrate_measured.h): measures the cost model's inputs on
// this machine's GPU (scenarios/studies/calibrate/calibrate_study.h; with --gpus N or under a
// launcher, also the links between the job's GPUs over NCCL: backend/cuda/cuda_probe.h) or CPU
// cores (scenarios/studies/calibrate/cpu_calibration.h, as many MPI ranks as the plan has) with the
// backend's probe (Backend::probe_gpu, probe_cpu) and writes a calibration file.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/registry.h"
#include "cli/calibrate_measured.h"
#include "cli/commands.h"
#include "cli/measure_options.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/scenario_options.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/config/output_files.h"
#include "scenarios/config/units.h"
#include "scenarios/studies/calibrate/calibrate_study.h"
#include "scenarios/studies/calibrate/cpu_calibration.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct CalibrateOptions {
  ScenarioOptions scenario;
  std::string backend = "cuda";
  std::string gpu;
  std::string out_file;
  bool json = false;
  std::optional<int> repetitions;  // default: 20 on a GPU, 5 on the CPU (its kernels are slower)
  std::optional<int> gpus;         // cuda: GPU processes of the job (default 1, or the launcher's)
  std::string nccl_max_bytes = "1GiB";
  MeasuredCalibrateOptions measured;
};

// Rendered before anything is written, so a failure leaves no partial output.
template <typename Report>
void print_and_write(const CalibrateOptions& o, const Report& report) {
  const std::string text = o.json ? scenarios::to_json(report) : scenarios::to_text(report);
  if (!o.out_file.empty()) scenarios::write_output_file(o.out_file, scenarios::to_calibration_toml(report), "--out");
  std::cout << text << std::flush;
}

// Measured on every rank of the plan's job at once; rank 0 prints and writes.
void run_calibrate_cpu(const CalibrateOptions& o) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  const models::Workload workload = models::build_workload(s.model, plan);
  const std::unique_ptr<backend::Backend> cpu = backend::make_backend(backend::BackendId::kCpu);
  cpu->require_job_fits(workload, models::estimate_memory(s.model, plan));
  cpu->probe_cpu(workload, probe_options(o.repetitions.value_or(5)), [&](const backend::CpuProbe& probe, int rank) {
    const scenarios::CpuCalibrationReport report = scenarios::run_cpu_calibration(s, probe);
    if (rank == 0) print_and_write(o, report);
  });
}

// This process's GPU (and the job's links); rank 0 prints and writes.
void run_calibrate_gpu(backend::BackendId id, const CalibrateOptions& o, double nccl_max_bytes) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  backend::ProbeOptions probe = probe_options(o.repetitions.value_or(20));
  probe.gpu_name = o.gpu;
  probe.processes = o.gpus;
  probe.nccl_max_bytes = nccl_max_bytes;
  backend::make_backend(id)->probe_gpu(probe, [&](const backend::GpuProbe& measured) {
    print_and_write(o, scenarios::run_calibration(s, measured.gpu, measured));
  });
}

// The options are checked first, whether or not the backend was built: a bad one is refused before
// anything is measured, on any machine.
void run_calibrate(const CLI::App& cmd, const CalibrateOptions& o) {
  if (o.repetitions && *o.repetitions < 1) {
    throw sim::ConfigError("--repetitions", std::to_string(*o.repetitions), "at least 1");
  }
  // Refused before any GPU time is spent on measurements that could not be written.
  if (!o.out_file.empty()) static_cast<void>(scenarios::checked_output_file(o.out_file, "--out"));
  if (o.gpus && *o.gpus < 1) throw sim::ConfigError("--gpus", std::to_string(*o.gpus), "at least 1");
  const double nccl_max_bytes = scenarios::parse_bytes(o.nccl_max_bytes, "--nccl-max-bytes");
  const backend::BackendId id = backend::backend_for(o.backend, backend::Capability::kCalibrate);
  const std::string cpu = "with --backend cpu (it is for the GPU and NCCL measurements of --backend cuda)";
  refuse_inert(cmd, "--gpu", id != backend::BackendId::kCpu, cpu);
  refuse_inert(cmd, "--nccl-max-bytes", id != backend::BackendId::kCpu, cpu);
  if (id == backend::BackendId::kCpu) {
    if (o.gpus) {
      throw sim::ConfigError("--gpus", std::to_string(*o.gpus),
                             "no value with --backend cpu (its job has as many ranks as the plan: cluster.gpus)");
    }
    run_calibrate_cpu(o);
    return;
  }
  run_calibrate_gpu(id, o, nccl_max_bytes);
}

}  // namespace

Action register_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate",
                                     "measure GEMM efficiency, memory bandwidth and the links between ranks (NCCL "
                                     "with --gpus N, MPI on the CPU), or fit them to measured runs (--measured), "
                                     "and write a calibration file");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--backend", o->backend, "the real backend that measures: cuda (default) or cpu");
  cmd->add_option("--gpu", o->gpu, "the GPU's name in gpus.csv (default: from the device's name)");
  cmd->add_option("--out", o->out_file, "write the calibration file (TOML) here");
  cmd->add_option("--repetitions", o->repetitions, "timed runs per measurement (the median is kept)")
      ->check(integer_in(1, 1'000'000));
  cmd->add_option("--gpus", o->gpus,
                  "cuda: GPU processes of the job (default 1; N > 1 starts N under mpirun on this machine's GPUs "
                  "and measures the collectives between them over NCCL; under mpirun/srun: the launcher's)")
      ->check(integer_in(1, 1'000'000));
  cmd->add_option("--nccl-max-bytes", o->nccl_max_bytes,
                  "cuda: the largest collective size measured over NCCL (default 1GiB; from 8KiB by x4)");
  cmd->add_flag("--json", o->json, "print one JSON object");
  add_measured_calibrate_options(*cmd, o->measured);
  return [cmd, o] {
    if (!cmd->parsed()) return;
    if (measured_calibration_asked(*cmd)) {
      const std::string measured = "with --measured (it fits measured runs on the simulator, no backend measures)";
      for (const char* option : {"--backend", "--gpu", "--repetitions", "--gpus", "--nccl-max-bytes"}) {
        refuse_inert(*cmd, option, false, measured);
      }
      run_measured_calibration_command(o->measured, o->scenario, o->out_file, o->json);
      return;
    }
    refuse_measured_only_options(*cmd);
    run_calibrate(*cmd, *o);
  };
}

}  // namespace megasim::cli
