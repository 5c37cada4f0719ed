// `validate --backend cpu`: the plan run for real as one MPI process per rank (started here under
// mpirun when the command was run on its own) and predicted by the simulator calibrated for this
// machine, compared on rank 0 (scenarios/studies/validate_study.h).
//
// The calibration is either the scenario's calibration.file, or, by default, measured by the
// validation itself in rounds interleaved with the measured iterations: one round of every probe of
// `calibrate --backend cpu` (one timed run each) before each iteration. On a shared machine the
// load changes between a separate calibrate and validate, and only a calibration taken alongside
// the iterations describes the machine they ran on. Each round's calibration predicts the
// iteration; the median of those predictions is compared with the median measured iteration, and
// the spread of the predictions is the probes' share of the verdict's uncertainty.
#pragma once

#include <functional>
#include <string>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"
#include "scenarios/studies/validate_study.h"

namespace megasim::cli {

struct CpuValidateOptions {
  int warmup = 1;
  int iterations = 7;
  double timeout_s = 300;
  bool interleaved = true;    // false: the scenario's calibration.file
  double bound_percent = 10;  // of the verdict
};

struct CpuValidation {
  scenarios::ValidationReport report;  // with its verdict
  models::Workload workload;
  backend::Trace predicted;
  backend::Trace measured;       // the median iteration
  std::string calibration_toml;  // interleaved: the calibration file of the median round; else empty
};

// Throws sim::ConfigError before any process starts for a scenario that cannot be validated here
// (cluster.gpu not "calibrated", FlashAttention, a plan too large for this machine, with
// `interleaved` a calibration.file, without it none), then runs the job; `done` is called on rank 0.
void validate_on_cpu(const scenarios::Scenario& scenario, const CpuValidateOptions& options,
                     const std::function<void(const CpuValidation&)>& done);

}  // namespace megasim::cli
