#include "cli/cpu_validate.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "cli/measure_options.h"
#include "cli/scenario_options.h"
#include "models/memory.h"
#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/config/device.h"
#include "scenarios/studies/calibrate/cpu_calibration.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

// A private folder for the rounds' calibration files (the simulator reads a calibration from a
// file), removed with everything in it when the validation ends.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "megasim-validate-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw sim::ConfigError("TMPDIR", std::filesystem::temp_directory_path().string(),
                             "a folder where validate can write its calibration rounds");
    }
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  // Writes `text` into the file `name` of the folder and returns its path.
  [[nodiscard]] std::string write(const std::string& name, const std::string& text) const {
    const std::string file = (path_ / name).string();
    std::ofstream out(file);
    out << text;
    if (!out.flush()) throw sim::ConfigError("TMPDIR", path_.string(), "a folder with room for a calibration file");
    return file;
  }

 private:
  std::filesystem::path path_;
};

// The simulator's iteration with `calibration_file` as the scenario's calibration.
scenarios::RunResult predict(scenarios::Scenario s, const std::string& calibration_file) {
  s.calibration_file = calibration_file;
  return scenarios::run_iteration_study(s);
}

void check_scenario(const scenarios::Scenario& s, const CpuValidateOptions& o) {
  if (s.gpu != scenarios::kCalibratedGpu) {
    throw sim::ConfigError("cluster.gpu", s.gpu,
                           "\"calibrated\" with --backend cpu: the prediction must be for this machine, as "
                           "megasim calibrate --backend cpu measures it");
  }
  if (s.plan.use_flash_attention) {
    throw sim::ConfigError("plan.use_flash_attention", "true", "false for the cpu backend (no fused attention kernel)");
  }
  if (s.plan.attention_kernel != models::AttentionKernel::kUnfused) {
    throw sim::ConfigError("plan.attention_kernel", std::string(models::to_string(s.plan.attention_kernel)),
                           "unfused for the cpu backend (no fused attention kernel)");
  }
  if (o.interleaved && !s.calibration_file.empty()) {
    throw sim::ConfigError("calibration.file", s.calibration_file,
                           "unset with --calibration interleaved (validate measures its own calibration between "
                           "the iterations); --calibration file validates this file");
  }
  // Every other section is checked now, as for a device of gpus.csv: the calibrated device exists
  // only once the rounds have measured it.
  scenarios::Scenario any_device = s;
  any_device.gpu = "A100-SXM-80GB";
  any_device.calibration_file.clear();
  scenarios::validate(o.interleaved ? any_device : s);
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  backend::make_backend(backend::BackendId::kCpu)
      ->require_job_fits(models::build_workload(s.model, plan), models::estimate_memory(s.model, plan));
  // With a file, the prediction first: a scenario the simulator refuses is refused before any
  // process is started.
  if (!o.interleaved) scenarios::run_iteration_study(s);
}

// Rank 0, after the job: each round's calibration predicts the iteration, and the median of those
// predictions (the round whose prediction it is) is compared with the median measured iteration,
// so that both sides are the median of paired samples of one machine state. (A calibration of
// each probe's median over the rounds would predict the sum of medians, which under a load's
// right-skewed delays is below the median of sums.)
CpuValidation compare_interleaved(const scenarios::Scenario& s, const CpuValidateOptions& o,
                                  const std::vector<scenarios::CpuCalibrationReport>& rounds,
                                  const std::vector<backend::Trace>& measured) {
  const ScratchFolder scratch;
  std::vector<std::string> calibrations;
  std::vector<scenarios::RunResult> predictions;
  std::vector<backend::Trace> predicted_traces;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    calibrations.push_back(scenarios::to_calibration_toml(rounds[r]));
    predictions.push_back(predict(s, scratch.write("round_" + std::to_string(r) + ".toml", calibrations.back())));
    predicted_traces.push_back(predictions.back().trace);
  }
  const std::size_t median = scenarios::median_iteration(predicted_traces);
  scenarios::RunResult& predicted = predictions[median];
  CpuValidation v;
  v.report = scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
  v.report.calibration = "interleaved";
  for (const backend::Trace& t : predicted_traces)
    v.report.predicted_iterations.push_back(sim::to_seconds(t.iteration_time));
  v.report.median_prediction = median;
  v.report.verdict = scenarios::judge(v.report, o.bound_percent);
  v.measured = measured[v.report.median_iteration];
  v.workload = std::move(predicted.workload);
  v.predicted = std::move(predicted.trace);
  v.calibration_toml = std::move(calibrations[median]);
  return v;
}

}  // namespace

void validate_on_cpu(const scenarios::Scenario& s, const CpuValidateOptions& o,
                     const std::function<void(const CpuValidation&)>& done) {
  check_scenario(s, o);
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  const models::Workload workload = models::build_workload(s.model, plan);
  backend::MeasureOptions run = measure_options(o.warmup, o.iterations, checked_timeout(o.timeout_s));
  std::vector<scenarios::CpuCalibrationReport> rounds;
  if (o.interleaved) {
    // One timed run per probe and round: the rounds are the repetitions.
    run.probe_before_iteration = [&rounds, &s](int /*iteration*/, const backend::CpuProbe& probe) {
      rounds.push_back(scenarios::run_cpu_calibration(s, probe));
    };
  }
  backend::make_backend(backend::BackendId::kCpu)->run(workload, run, [&](const std::vector<backend::Trace>& measured) {
    if (o.interleaved) {
      done(compare_interleaved(s, o, rounds, measured));
      return;
    }
    scenarios::RunResult predicted = scenarios::run_iteration_study(s);
    CpuValidation v;
    v.report = scenarios::compare(predicted.workload, predicted.trace, measured, s.name);
    v.report.verdict = scenarios::judge(v.report, o.bound_percent);
    v.measured = measured[v.report.median_iteration];
    v.workload = std::move(predicted.workload);
    v.predicted = std::move(predicted.trace);
    done(v);
  });
}

}  // namespace megasim::cli
