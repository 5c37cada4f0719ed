// `megasim validate SCENARIO --backend cpu|cuda [--stage S] [--iterations N] [--warmup N] [--json]
// [--out DIR]`: runs the plan for real and in the simulator with the scenario's calibration, and
// prints predicted against measured (scenarios/validate_study.h). cpu: the whole plan, one MPI
// process per rank (started here under mpirun when the command was run on its own). cuda: the whole
// plan, one process per GPU (cli/cuda_runs.h); with --stage S, shard mode: the compute of one rank of
// pipeline stage S on this machine's GPU (backend/cuda/shard_runner.h), compared with that rank's
// predicted compute. --out DIR writes validation.json
// and the Perfetto traces measured_trace.json and predicted_trace.json.
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "cli/cpu_runs.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/scenario_options.h"
#include "models/plan.h"
#include "scenarios/device.h"
#include "scenarios/output_files.h"
#include "scenarios/perfetto_trace.h"
#include "scenarios/run_study.h"
#include "scenarios/validate_study.h"
#include "sim/error.h"

#ifdef MEGASIM_HAS_CUDA
#include "backend/cuda/device_info.h"
#include "backend/cuda/shard_runner.h"
#include "cli/cuda_runs.h"
#endif

namespace megasim::cli {
namespace {

struct ValidateOptions {
  ScenarioOptions scenario;
  std::string backend = "cpu";
  int iterations = 3;
  int warmup = 1;
  bool shard = false;      // cuda: --stage was given
  std::int64_t stage = 0;  // cuda shard mode: the pipeline stage whose compute is measured
  double timeout_s = 300;
  bool json = false;
  std::string out_dir;
};

// The files of --out DIR, written together or not at all (scenarios/output_files.h).
const std::vector<std::string> kOutputFiles = {"validation.json", "measured_trace.json", "predicted_trace.json"};

// Adds the trace of every rank at `path`, streamed.
void add_trace(scenarios::OutputFiles& files, const std::string& path, const models::Workload& workload,
               const backend::Trace& trace, const scenarios::Scenario& s) {
  const scenarios::TraceFilter all{.ranks = {}, .max_ranks = 0};
  files.add(path, "--out", [&](std::ostream& out) { scenarios::write_perfetto_trace(out, workload, trace, all, &s); });
}

// Prints the comparison and, with --out, writes it and both traces.
void emit(const ValidateOptions& o, const scenarios::Scenario& s, const scenarios::ValidationReport& report,
          const models::Workload& workload, const backend::Trace& predicted, const backend::Trace& measured) {
  const std::string json = scenarios::to_json(report);
  if (!o.out_dir.empty()) {
    scenarios::OutputFiles files;
    files.create_folder(o.out_dir, "--out");
    files.add(o.out_dir + "/" + kOutputFiles[0], "--out", json);
    add_trace(files, o.out_dir + "/" + kOutputFiles[1], workload, measured, s);
    add_trace(files, o.out_dir + "/" + kOutputFiles[2], workload, predicted, s);
    files.commit();
  }
  std::cout << (o.json ? json : scenarios::to_text(report)) << std::flush;
}

void validate_on_cpu(const ValidateOptions& o, const scenarios::Scenario& s) {
  if (s.gpu != scenarios::kCalibratedGpu) {
    throw sim::ConfigError("cluster.gpu", s.gpu,
                           "\"calibrated\" with --backend cpu: the prediction must be for this machine, as "
                           "megasim calibrate --backend cpu measured it");
  }
  // The prediction first: a scenario the simulator refuses (no calibration, a plan that does not fit)
  // is refused before any process is started.
  const scenarios::RunResult predicted = scenarios::run_iteration_study(s);
  if (s.plan.use_flash_attention) {
    throw sim::ConfigError("plan.use_flash_attention", "true", "false for the cpu backend (no fused attention kernel)");
  }
  run_as_mpi_job(predicted.workload.plan.world_size, [&](int rank) {
    backend::cpu::CpuRunOptions run;
    run.warmup_iterations = o.warmup;
    run.iterations = o.iterations;
    run.timeout = checked_timeout(o.timeout_s);
    const std::vector<backend::Trace> measured = backend::cpu::run_cpu_iterations(predicted.workload, run);
    if (rank != 0) return;
    const scenarios::ValidationReport report =
        scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
    emit(o, s, report, predicted.workload, predicted.trace, measured[report.median_iteration]);
  });
}

void validate_on_cuda([[maybe_unused]] const ValidateOptions& o, [[maybe_unused]] const scenarios::Scenario& s) {
#ifdef MEGASIM_HAS_CUDA
  if (backend::cuda::visible_gpus().empty()) {
    throw sim::ConfigError("--backend", o.backend, "a machine with a visible CUDA GPU (none found)");
  }
  const scenarios::RunResult predicted = scenarios::run_iteration_study(s);
  if (!o.shard) {  // the whole plan, one process per GPU
    backend::cuda::CudaRunOptions run;
    run.warmup_iterations = o.warmup;
    run.iterations = o.iterations;
    run.timeout = checked_timeout(o.timeout_s);
    run_cuda_plan(predicted.workload, run, [&](const std::vector<backend::Trace>& measured) {
      const scenarios::ValidationReport report =
          scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
      emit(o, s, report, predicted.workload, predicted.trace, measured[report.median_iteration]);
    });
    return;
  }
  backend::cuda::ShardRunner shard(predicted.workload, o.stage);
  const std::vector<backend::Trace> measured = shard.run(o.warmup, o.iterations);
  const scenarios::ValidationReport report =
      scenarios::compare_compute(predicted.workload, predicted.trace, measured, s.name);
  emit(o, s, report, predicted.workload, predicted.trace, measured[report.median_iteration]);
#else
  throw sim::ConfigError("--backend", o.backend,
                         "cpu: this megasim was built without the CUDA backend (see `megasim backends`)");
#endif
}

void run_validate(const ValidateOptions& o) {
  if (o.backend != "cpu" && o.backend != "cuda") throw sim::ConfigError("--backend", o.backend, "cpu or cuda");
  if (o.iterations < 1) throw sim::ConfigError("--iterations", std::to_string(o.iterations), "at least 1");
  if (o.warmup < 0) throw sim::ConfigError("--warmup", std::to_string(o.warmup), "0 or more");
  checked_timeout(o.timeout_s);
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  // Before anything runs: an --out that cannot take the files is refused at once.
  if (!o.out_dir.empty()) scenarios::check_output_files(o.out_dir, kOutputFiles, "--out");
  if (o.backend == "cpu") {
    validate_on_cpu(o, s);
  } else {
    validate_on_cuda(o, s);
  }
}

}  // namespace

Action register_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "run the plan on a real backend and in the calibrated simulator, and compare the two");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--backend", o->backend,
                  "the real backend: cpu (Eigen + MPI) or cuda (CUDA + NCCL, one process per GPU), the whole plan")
      ->capture_default_str();
  cmd->add_option("--stage", o->stage,
                  "cuda shard mode: measure only the compute of rank 0 of this pipeline stage, on this machine's GPU")
      ->check(integer_in(0, 9'999));
  add_timeout_option(*cmd, o->timeout_s);
  cmd->add_option("--iterations", o->iterations, "measured iterations (the median is compared)")
      ->capture_default_str()
      ->check(integer_in(1, 100'000));
  cmd->add_option("--warmup", o->warmup, "iterations run first and discarded")
      ->capture_default_str()
      ->check(integer_in(0, 100'000));
  cmd->add_flag("--json", o->json, "print the comparison as JSON");
  cmd->add_option("--out", o->out_dir, "write validation.json, measured_trace.json and predicted_trace.json into DIR");
  return [cmd, o] {
    if (!cmd->parsed()) return;
    o->shard = given(*cmd, "--stage");
    refuse_inert(*cmd, "--stage", o->backend != "cpu",
                 "with --backend cpu (shard mode measures one rank's compute on this machine's GPU: --backend cuda)");
    refuse_inert(*cmd, "--timeout", !o->shard,
                 "with --stage (shard mode runs one process, which waits on no other rank)");
    run_validate(*o);
  };
}

}  // namespace megasim::cli
