// `megasim validate SCENARIO --backend cpu [--iterations N] [--warmup N] [--json] [--out DIR]`: runs
// the plan for real on the cpu backend (one MPI process per rank, started here under mpirun when the
// command was run on its own) and in the simulator with the scenario's calibration, and prints
// predicted against measured (scenarios/validate_study.h). --out DIR writes validation.json and the
// Perfetto traces measured_trace.json and predicted_trace.json.
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "cli/cpu_runs.h"
#include "cli/scenario_options.h"
#include "models/plan.h"
#include "scenarios/perfetto_trace.h"
#include "scenarios/run_study.h"
#include "scenarios/validate_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct ValidateOptions {
  ScenarioOptions scenario;
  std::string backend = "cpu";
  int iterations = 3;
  int warmup = 1;
  bool json = false;
  std::string out_dir;
};

std::string perfetto(const models::Workload& workload, const backend::Trace& trace) {
  std::ostringstream out;
  scenarios::TraceFilter all;
  all.max_ranks = 0;
  scenarios::write_perfetto_trace(out, workload, trace, all);
  return out.str();
}

void run_validate(const ValidateOptions& o) {
  if (o.backend == "cuda") {
    throw sim::ConfigError("--backend", o.backend,
                           "cpu: running whole plans on GPUs is not built yet (`megasim calibrate --backend cuda` "
                           "measures a GPU's kernels)");
  }
  if (o.backend != "cpu") throw sim::ConfigError("--backend", o.backend, "cpu");
  if (o.iterations < 1) throw sim::ConfigError("--iterations", std::to_string(o.iterations), "at least 1");
  if (o.warmup < 0) throw sim::ConfigError("--warmup", std::to_string(o.warmup), "0 or more");
  const scenarios::Scenario s = resolve_scenario(o.scenario);
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
    const std::vector<backend::Trace> measured = backend::cpu::run_cpu_iterations(predicted.workload, run);
    if (rank != 0) return;
    const scenarios::ValidationReport report =
        scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
    const std::string json = scenarios::to_json(report);
    if (!o.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.out_dir, ec);
      if (ec) throw sim::ConfigError("--out", o.out_dir, "a directory that can be created and written");
      write_file(o.out_dir + "/validation.json", json, "--out");
      write_file(o.out_dir + "/measured_trace.json", perfetto(predicted.workload, measured[report.median_iteration]),
                 "--out");
      write_file(o.out_dir + "/predicted_trace.json", perfetto(predicted.workload, predicted.trace), "--out");
    }
    std::cout << (o.json ? json : scenarios::to_text(report)) << std::flush;
  });
}

}  // namespace

Action register_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "run the plan on a real backend and in the calibrated simulator, and compare the two");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--backend", o->backend, "the real backend: cpu (Eigen + MPI)")->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "measured iterations (the median is compared)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "iterations run first and discarded")->capture_default_str();
  cmd->add_flag("--json", o->json, "print the comparison as JSON");
  cmd->add_option("--out", o->out_dir, "write validation.json, measured_trace.json and predicted_trace.json into DIR");
  return [cmd, o] {
    if (cmd->parsed()) run_validate(*o);
  };
}

}  // namespace megasim::cli
