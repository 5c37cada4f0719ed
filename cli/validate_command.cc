// `megasim validate SCENARIO --backend cpu|cuda [--stage S] [--iterations N] [--warmup N]
// [--calibration interleaved|file] [--bound PERCENT] [--json] [--out DIR]`: runs the plan for real
// and in the simulator calibrated for this hardware, and prints predicted against measured with a
// verdict against the bound (scenarios/studies/validate_study.h, validate_verdict.h). cpu: the
// whole plan, one MPI process per rank, calibrated by default in rounds interleaved with the
// measured iterations (cli/cpu_validate.h), or by the scenario's calibration.file. cuda: the
// scenario's calibration file; the whole plan, one process per GPU (backend/cuda/cuda_job.h); with
// --stage S, shard mode: the compute of one rank of pipeline stage S on this machine's GPU
// (backend/cuda/shard_runner.h), compared with that rank's predicted compute. --out DIR writes
// validation.json, the Perfetto traces measured_trace.json and predicted_trace.json, and
// (interleaved) the calibration it measured, calibration.toml.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "cli/cpu_validate.h"
#include "cli/measure_options.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/scenario_options.h"
#include "models/plan.h"
#include "scenarios/config/device.h"
#include "scenarios/config/output_files.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/validate_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct ValidateOptions {
  ScenarioOptions scenario;
  std::string backend = "cpu";
  int iterations = 7;
  int warmup = 1;
  std::string calibration;  // interleaved (cpu's default) or file (cuda's only)
  double bound_percent = 10;
  bool shard = false;      // cuda: --stage was given
  std::int64_t stage = 0;  // cuda shard mode: the pipeline stage whose compute is measured
  double timeout_s = 300;
  bool json = false;
  std::string out_dir;
};

// The files of --out DIR, written together or not at all (scenarios/config/output_files.h).
// calibration.toml: with --calibration interleaved, the calibration of the median round.
const std::vector<std::string> kOutputFiles = {"validation.json", "measured_trace.json", "predicted_trace.json",
                                               "calibration.toml"};

// Adds the trace of every rank at `path`, streamed.
void add_trace(scenarios::OutputFiles& files, const std::string& path, const models::Workload& workload,
               const backend::Trace& trace, const scenarios::Scenario& s) {
  const scenarios::TraceFilter all{.ranks = {}, .max_ranks = 0};
  files.add(path, "--out", [&](std::ostream& out) { scenarios::write_perfetto_trace(out, workload, trace, all, &s); });
}

// Prints the comparison and, with --out, writes it, both traces and a measured calibration (when
// not empty).
void emit(const ValidateOptions& o, const scenarios::Scenario& s, const scenarios::ValidationReport& report,
          const models::Workload& workload, const backend::Trace& predicted, const backend::Trace& measured,
          const std::string& calibration_toml = {}) {
  const std::string json = scenarios::to_json(report);
  if (!o.out_dir.empty()) {
    scenarios::OutputFiles files;
    files.create_folder(o.out_dir, "--out");
    files.add(o.out_dir + "/" + kOutputFiles[0], "--out", json);
    add_trace(files, o.out_dir + "/" + kOutputFiles[1], workload, measured, s);
    add_trace(files, o.out_dir + "/" + kOutputFiles[2], workload, predicted, s);
    if (!calibration_toml.empty()) files.add(o.out_dir + "/" + kOutputFiles[3], "--out", calibration_toml);
    files.commit();
  }
  std::cout << (o.json ? json : scenarios::to_text(report)) << std::flush;
}

void validate_with_cpu_backend(const ValidateOptions& o, const scenarios::Scenario& s) {
  CpuValidateOptions cpu;
  cpu.warmup = o.warmup;
  cpu.iterations = o.iterations;
  cpu.timeout_s = o.timeout_s;
  cpu.interleaved = o.calibration != "file";
  cpu.bound_percent = o.bound_percent;
  validate_on_cpu(s, cpu, [&](const CpuValidation& v) {
    emit(o, s, v.report, v.workload, v.predicted, v.measured, v.calibration_toml);
  });
}

// The cuda backend: the whole plan as a job of one process per GPU, or with --stage one stage's
// compute on this process's GPU (shard mode).
void validate_on_cuda(const ValidateOptions& o, const scenarios::Scenario& s) {
  const std::unique_ptr<backend::Backend> cuda = backend::make_backend(backend::BackendId::kCuda);
  cuda->require_machine();
  const scenarios::RunResult predicted = scenarios::run_iteration_study(s);
  if (!o.shard) {
    const backend::MeasureOptions run = measure_options(o.warmup, o.iterations, checked_timeout(o.timeout_s));
    cuda->run(predicted.workload, run, [&](const std::vector<backend::Trace>& measured) {
      scenarios::ValidationReport report = scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
      report.verdict = scenarios::judge(report, o.bound_percent);
      emit(o, s, report, predicted.workload, predicted.trace, measured[report.median_iteration]);
    });
    return;
  }
  const std::vector<backend::Trace> measured = cuda->run_stage(predicted.workload, o.stage, o.warmup, o.iterations);
  scenarios::ValidationReport report =
      scenarios::compare_compute(predicted.workload, predicted.trace, measured, s.name);
  report.verdict = scenarios::judge(report, o.bound_percent);
  emit(o, s, report, predicted.workload, predicted.trace, measured[report.median_iteration]);
}

void run_validate(const ValidateOptions& o) {
  const backend::BackendId id = backend::backend_for(o.backend, backend::Capability::kValidate);
  if (o.iterations < 1) throw sim::ConfigError("--iterations", std::to_string(o.iterations), "at least 1");
  if (o.warmup < 0) throw sim::ConfigError("--warmup", std::to_string(o.warmup), "0 or more");
  if (!(o.bound_percent > 0) || !(o.bound_percent < 1000)) {
    throw sim::ConfigError("--bound", fmt::format("{}", o.bound_percent), "a percentage in (0, 1000)");
  }
  if (!o.calibration.empty() && o.calibration != "interleaved" && o.calibration != "file") {
    throw sim::ConfigError("--calibration", o.calibration, "interleaved or file");
  }
  if (id == backend::BackendId::kCuda && o.calibration == "interleaved") {
    throw sim::ConfigError("--calibration", o.calibration,
                           "file with --backend cuda (the scenario's calibration file; only the cpu backend measures "
                           "its calibration between the iterations)");
  }
  checked_timeout(o.timeout_s);
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  // Before anything runs: an --out that cannot take the files is refused at once.
  if (!o.out_dir.empty()) scenarios::check_output_files(o.out_dir, kOutputFiles, "--out");
  if (id == backend::BackendId::kCpu) {
    validate_with_cpu_backend(o, s);
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
  cmd->add_option("--iterations", o->iterations,
                  "measured iterations (the median is compared; with --calibration interleaved, one calibration "
                  "round before each)")
      ->capture_default_str()
      ->check(integer_in(1, 100'000));
  cmd->add_option("--calibration", o->calibration,
                  "cpu: interleaved (default: measure the calibration in rounds between the measured iterations) or "
                  "file (the scenario's calibration.file); cuda: file");
  cmd->add_option("--bound", o->bound_percent,
                  "the error bound of the verdict, percent (inconclusive when the timing spread exceeds it)")
      ->capture_default_str()
      ->check(number_in(0.001, 999));
  cmd->add_option("--warmup", o->warmup, "iterations run first and discarded")
      ->capture_default_str()
      ->check(integer_in(0, 100'000));
  cmd->add_flag("--json", o->json, "print the comparison as JSON");
  cmd->add_option("--out", o->out_dir,
                  "write validation.json, measured_trace.json, predicted_trace.json and (--calibration interleaved) "
                  "the measured calibration.toml into DIR");
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
