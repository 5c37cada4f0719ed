// `megasim calibrate --measured FILE.csv [SCENARIO]`: calibrate on small runs, predict big ones.
// Given measured iteration times (or MFU) of a few runs (measured_rows.h), fits a few named physical
// parameters of the cost model (calibration_parameters.h) so that the simulator reproduces them,
// and writes a calibration file that scenarios load (`[calibration] file = ...`).
//
// The fit: bounded nonlinear least squares (measured_fit.h) on r_i = log(predicted_i / measured_i),
// each evaluation simulating every row (run_iteration_study, as `megasim run` does, without the
// straggler what-ifs) with the trial values in place of the scenario calibration's. Starts from the
// rows' own calibration (the prior). Never more parameters than rows. A parameter the rows cannot
// identify (measured_fit.h identifiability: no sensitivity, or collinear with the others, judged at
// the prior and again at the fitted values) is held at its prior and reported; a parameter that
// ends on a bound is reported as such.
// Leave-one-out: each row is left out in turn, the identifiable parameters refitted from the prior
// on the others, and the row predicted; the mean absolute LOO error estimates the error on a new
// run of the same kind. Needs more rows than fitted parameters.
// Every row must use the same calibration file and GPU (one file is fitted) and have the same prior
// value of each fitted parameter. Deterministic: the same inputs give the same report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/config/scenario.h"
#include "scenarios/studies/calibrate/measured_fit.h"
#include "scenarios/studies/calibrate/measured_rows.h"

namespace megasim::scenarios {

struct MeasuredCalibrationRequest {
  std::string csv;               // the measured rows to fit
  Scenario base;                 // rows without a scenario cell start from it
  std::vector<std::string> fit;  // parameter names; empty: default_fit_parameters()
  std::string predict_csv;       // optional: rows predicted with the fit, not fitted
  bool leave_one_out = true;
  unsigned threads = 0;  // rows simulated at once; 0: the hardware's
};

struct FittedParameter {
  std::string name;     // calibration_parameters() name, also the file key
  std::string section;  // the file's [section]
  std::string unit;
  double lower = 0, upper = 0;
  double prior = 0;   // the rows' calibration value
  double fitted = 0;  // the prior when held
  Weakness weakness = Weakness::kNone;
  bool held = false;       // not identifiable: left at the prior
  bool at_bound = false;   // fitted onto lower or upper
  double sensitivity = 0;  // largest |d log(prediction) / d log(parameter)| over the rows, at the prior
};

struct CalibratedRow {
  std::string name;
  std::size_t line = 0;
  bool fitted = true;  // false: a --predict row
  double measured = 0;
  double before = 0;                    // predicted with the rows' calibration
  double after = 0;                     // predicted with the fitted parameters
  std::optional<double> leave_one_out;  // predicted by the fit without this row
};

struct MeasuredCalibrationReport {
  std::string csv;
  std::string predict_csv;
  MeasuredTarget target = MeasuredTarget::kIterationTime;
  std::string gpu;
  std::string calibration_file;  // the rows' calibration file; "" for the public defaults
  std::vector<FittedParameter> parameters;
  std::vector<CalibratedRow> rows;      // the fitted rows, then the --predict rows
  std::vector<double> singular_values;  // of the fitted parameters' unit-column sensitivities
  int iterations = 0;
  int evaluations = 0;  // each simulates every fitted row
  bool converged = false;
  std::string leave_one_out_note;  // why there is no LOO ("" when there is)
};

// Throws sim::ConfigError for bad rows (naming the file, line and column), unknown parameters, more
// parameters than rows, rows that disagree on the calibration file, GPU or a prior, and rows whose
// plan is impossible.
MeasuredCalibrationReport run_measured_calibration(const MeasuredCalibrationRequest& request);

// Relative error of a prediction, (predicted - measured) / measured.
double relative_error(double predicted, double measured);
// Mean |relative error| of the rows' `after` (fitted: true) or of the --predict rows (false); of
// `before` when `before` is set. nullopt when there are no such rows.
std::optional<double> mean_abs_error(const MeasuredCalibrationReport& report, bool fitted, bool before);
// Mean |relative error| of the leave-one-out predictions; nullopt without them.
std::optional<double> mean_abs_leave_one_out_error(const MeasuredCalibrationReport& report);

std::string to_text(const MeasuredCalibrationReport& report);
// Keys: csv, predict_csv, target, gpu, calibration_file, parameters [{name, section, unit, lower,
// upper, prior, fitted, status, sensitivity}], rows [{name, line, role, measured, before, after,
// error_before, error_after, leave_one_out, leave_one_out_error}], singular_values, iterations,
// evaluations, converged, mean_abs_error_before/after, leave_one_out_mean_abs_error,
// leave_one_out_note, predict_mean_abs_error_before/after.
std::string to_json(const MeasuredCalibrationReport& report);
// The rows' calibration file with the fitted (not held) parameters replaced, under a header comment
// naming the rows and `fitted_at` (a UTC time, given by the caller so that the report stays
// deterministic).
std::string to_calibration_toml(const MeasuredCalibrationReport& report, const std::string& fitted_at);
// "fitted", "at lower bound", "at upper bound", "held: no row is sensitive to it", "held: collinear
// with the other parameters".
std::string parameter_status(const FittedParameter& p);

}  // namespace megasim::scenarios
