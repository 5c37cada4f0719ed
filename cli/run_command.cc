// `megasim run SCENARIO [--gpus N] [--backend sim|cpu|cuda] [--iterations N] [--timeout S] [--out DIR
// [--trace-ranks R,... | --max-trace-ranks K]] [--samples N] [--json]`:
// one training iteration simulated rank by rank (sim), or measured on a real backend (the median of
// N after one warm-up: cpu, one MPI process per rank; cuda, one process per GPU), reported alike.
#include <chrono>
#include <iostream>
#include <memory>

#include "backend/backend.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "cli/measure_options.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/progress_bar.h"
#include "cli/scenario_options.h"
#include "models/memory.h"
#include "models/plan.h"
#include "scenarios/config/device.h"
#include "scenarios/config/resolved_scenario.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/samples_study.h"
#include "scenarios/studies/validate_study.h"
#include "scenarios/trace/run_outputs.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct RunOptions {
  ScenarioOptions scenario;
  std::string backend = "sim";
  int iterations = 3;
  double timeout_s = 300;
  std::string out_dir;
  bool json = false;
  std::vector<std::int64_t> trace_ranks;
  std::int64_t max_trace_ranks = 16;
  std::int64_t samples = 1;
};

// Prints the report and, with --out, writes report.json, trace.bin and trace.json
// (scenarios/trace/run_outputs.h: all or none; the traces streamed to their files, trace.json GBs
// at 12,288 GPUs with --max-trace-ranks 0). An explicit --trace-ranks list is written whole.
void emit(const RunOptions& o, const scenarios::Scenario& s, const models::Workload& workload,
          const backend::Trace& trace, const scenarios::IterationReport& report) {
  const std::string report_json = scenarios::to_json(report);
  if (!o.out_dir.empty()) {
    const scenarios::TraceFilter filter{.ranks = o.trace_ranks, .max_ranks = o.max_trace_ranks};
    scenarios::write_run_outputs(o.out_dir, "--out", report_json, workload, trace, filter, s);
  }
  std::cout << (o.json ? report_json : scenarios::to_text(report)) << std::flush;
}

// What a measured run reports against: the device (MFU's peak), the memory estimate and the workload.
struct MeasuredRun {
  models::GpuSpec device;
  models::MemoryEstimate memory;
  models::Workload workload;
};

// Checks the options, refuses a plan that does not fit, builds the workload.
MeasuredRun prepare_measured_run(const RunOptions& o, const scenarios::ResolvedScenario& resolved) {
  if (o.iterations < 1) throw sim::ConfigError("--iterations", std::to_string(o.iterations), "at least 1");
  checked_timeout(o.timeout_s);
  MeasuredRun run;
  run.device = resolved.device.gpu;
  run.memory = resolved.memory;
  models::require_fits(run.memory, run.device);
  run.workload = models::build_workload(resolved.scenario.model, resolved.plan);
  return run;
}

// The median measured iteration, reported as the simulator reports its own.
void report_measured(const RunOptions& o, const scenarios::Scenario& s, const MeasuredRun& run,
                     const std::vector<backend::Trace>& traces) {
  const backend::Trace& median = traces[scenarios::median_iteration(traces)];
  scenarios::IterationReport report = scenarios::summarize(run.workload, median, run.device);
  report.memory = run.memory;
  report.provenance = scenarios::provenance_of(s, median.backend);
  emit(o, s, run.workload, median, report);
}

// The iteration measured on a real backend (the median of --iterations, after one warm-up: cpu, one
// MPI process per rank; cuda, one process per GPU), reported as the simulator's is. The cpu
// backend's MFU is relative to this machine's measured peak (a "calibrated" device), the cuda
// backend's to the scenario's GPU.
void run_measured(const RunOptions& o, const scenarios::Scenario& s, backend::BackendId id) {
  const std::unique_ptr<backend::Backend> real = backend::make_backend(id);
  real->require_machine();
  if (id == backend::BackendId::kCpu && s.gpu != scenarios::kCalibratedGpu) {
    throw sim::ConfigError("cluster.gpu", s.gpu,
                           "\"calibrated\" with --backend cpu (MFU is relative to this machine's measured peak: "
                           "megasim calibrate --backend cpu writes the calibration file)");
  }
  const MeasuredRun run = prepare_measured_run(o, scenarios::resolve(s));
  real->run(run.workload, measure_options(1, o.iterations, checked_timeout(o.timeout_s)),
            [&](const std::vector<backend::Trace>& traces) { report_measured(o, s, run, traces); });
}

// Options that do nothing in this run's context are refused (cli/option_checks.h).
void check_context(const CLI::App& cmd, const RunOptions& o, backend::BackendId id) {
  const bool real = id != backend::BackendId::kSim;
  const std::string measured = "with --backend sim (the simulator computes one deterministic iteration; " +
                               std::string("this option is for the measured runs of --backend cpu|cuda)");
  refuse_inert(cmd, "--iterations", real, measured);
  refuse_inert(cmd, "--timeout", real, measured);
  refuse_inert(cmd, "--samples", !real,
               "with --backend sim (a measured run reports its own spread over --iterations; samples are "
               "simulations with other seeds)");
  const std::string no_out =
      "without --out DIR (it selects what trace.bin and trace.json, written only with --out, hold)";
  refuse_inert(cmd, "--trace-ranks", !o.out_dir.empty(), no_out);
  refuse_inert(cmd, "--max-trace-ranks", !o.out_dir.empty(), no_out);
  refuse_inert(cmd, "--max-trace-ranks", o.trace_ranks.empty(),
               "with --trace-ranks (an explicit list is written whole; the limit applies to the default selection)");
}

void run_run(const RunOptions& o, backend::BackendId id) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  // Before the iteration runs, not after: an --out that cannot take the files is refused at once.
  if (!o.out_dir.empty()) scenarios::check_run_outputs(o.out_dir, "--out");
  if (id != backend::BackendId::kSim) {
    run_measured(o, s, id);
    return;
  }
  // Resolved once (its calibration file read once) for the run; the samples re-seed it.
  const scenarios::ResolvedScenario resolved = scenarios::resolve(s);
  scenarios::RunResult result = scenarios::run_iteration_study(resolved);
  if (o.samples > 1) {
    ProgressBar bar;
    result.report.samples =
        scenarios::run_samples_study(resolved, o.samples, result, [&](std::int64_t done, std::int64_t total) {
          bar.update("samples simulated", static_cast<std::size_t>(done), static_cast<std::size_t>(total));
        });
  }
  emit(o, s, result.workload, result.trace, result.report);
  if (!o.json) std::cerr << "simulated in " << result.wall_time_s << " s\n";
}

}  // namespace

Action register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "simulate one training iteration of the scenario rank by rank (or run it for real: --backend cpu|cuda)");
  add_scenario_options(*cmd, o->scenario);
  add_gpus_option(*cmd, o->scenario);
  cmd->add_option("--backend", o->backend,
                  "sim (simulate), cpu (run for real, one MPI process per rank) or cuda (run for real, one "
                  "process per GPU)")
      ->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "--backend cpu|cuda: measured iterations (the median is reported)")
      ->capture_default_str()
      ->check(integer_in(1, 100'000));
  add_timeout_option(*cmd, o->timeout_s);
  cmd->add_option("--samples", o->samples,
                  "simulate N independent samples (each with its own ECMP seed and straggler, jitter and GC draws) "
                  "and report the median and 5th-95th percentile of iteration time and MFU")
      ->capture_default_str()
      ->check(integer_in(1, scenarios::kMaxSamples));
  cmd->add_option("--out", o->out_dir,
                  "write report.json, trace.bin (for megasim whatif) and trace.json (Perfetto) into DIR");
  cmd->add_flag("--json", o->json, "print the report as JSON");
  cmd->add_option("--trace-ranks", o->trace_ranks,
                  "with --out: exactly these ranks in the traces (default: --max-trace-ranks of TP rank 0 of every "
                  "stage, replica by replica)")
      ->delimiter(',')
      ->check(integer_in(0, kMaxGpusOption - 1));
  cmd->add_option("--max-trace-ranks", o->max_trace_ranks,
                  "with --out: at most this many ranks in the traces' default selection (0: all, as whatif needs)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxGpusOption));
  return [cmd, o] {
    if (!cmd->parsed()) return;
    const backend::BackendId id = backend::backend_for(o->backend, backend::Capability::kRun);
    check_context(*cmd, *o, id);
    run_run(*o, id);
  };
}

}  // namespace megasim::cli
