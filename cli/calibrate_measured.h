// `megasim calibrate --measured FILE.csv [SCENARIO] [--fit a,b,c] [--predict FILE.csv]
// [--no-leave-one-out] [--out FILE.toml] [--json]`: fits named cost-model parameters to measured
// iteration times or MFU (scenarios/studies/calibrate/measured_calibration_study.h) and writes the
// calibration file. The options live on `megasim calibrate`, which hands over here when --measured
// is given.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/scenario_options.h"

namespace megasim::cli {

struct MeasuredCalibrateOptions {
  std::string csv;
  std::string predict_csv;
  std::vector<std::string> fit;
  bool no_leave_one_out = false;
};

// Adds --measured, --fit, --predict and --no-leave-one-out to `command`, and the CSV format and the
// fittable parameters to its help.
void add_measured_calibrate_options(CLI::App& command, MeasuredCalibrateOptions& options);
// Whether --measured was given.
bool measured_calibration_asked(const CLI::App& command);
// Refuses --fit, --predict and --no-leave-one-out without --measured.
void refuse_measured_only_options(const CLI::App& command);

// Runs the fit; prints the report (text or JSON) and writes `out_file` when not empty (checked before
// any simulation).
void run_measured_calibration_command(const MeasuredCalibrateOptions& options, const ScenarioOptions& scenario,
                                      const std::string& out_file, bool json);

}  // namespace megasim::cli
