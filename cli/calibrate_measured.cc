#include "cli/calibrate_measured.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "cli/option_checks.h"
#include "scenarios/config/output_files.h"
#include "scenarios/studies/calibrate/calibration_parameters.h"
#include "scenarios/studies/calibrate/measured_calibration_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

// The fitted file's time stamp: now in UTC, or SOURCE_DATE_EPOCH when set (the reproducible-builds
// convention, so that a rerun can give an identical file).
std::string fitted_at() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr && *epoch != '\0') {
    char* end = nullptr;
    const long long seconds = std::strtoll(epoch, &end, 10);
    if (*end != '\0' || seconds < 0) {
      throw sim::ConfigError("SOURCE_DATE_EPOCH", epoch, "seconds since 1970 (an integer >= 0)");
    }
    t = static_cast<std::time_t>(seconds);
  }
  std::tm utc{};
  gmtime_r(&t, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec);
}

constexpr const char* kCsvHelp =
    "\nCalibration to measured runs (--measured FILE.csv):\n"
    "  The CSV has a header row and one row per measured run; lines starting with # and blank lines are\n"
    "  skipped. Columns: name (optional, the row's name), scenario (optional, a scenario file relative to\n"
    "  the CSV; default SCENARIO), any scenario key as --set takes it (cluster.gpus, plan.micro_batch_size,\n"
    "  ...; an empty cell keeps the scenario's value), and exactly one target: iteration_time_s (seconds)\n"
    "  or mfu (a fraction in (0, 1]). The fit minimises the squared log ratios predicted/measured over\n"
    "  the --fit parameters (bounded Levenberg-Marquardt), never more of them than rows; parameters the\n"
    "  rows cannot identify are held at the scenario calibration's value. Docs: docs/calibration.md.\n"
    "  Parameters (--fit, default best_gemm_efficiency,nvlink_efficiency,network_efficiency):\n";

}  // namespace

void add_measured_calibrate_options(CLI::App& command, MeasuredCalibrateOptions& o) {
  command.add_option("--measured", o.csv,
                     "fit cost-model parameters to the measured runs of this CSV (see below) instead of measuring "
                     "on a backend");
  command.add_option("--fit", o.fit, "--measured: the parameters to fit, comma-separated (see below)")->delimiter(',');
  command.add_option("--predict", o.predict_csv,
                     "--measured: more measured runs (same format) predicted with the fit and reported, not fitted");
  command.add_flag("--no-leave-one-out", o.no_leave_one_out,
                   "--measured: skip the leave-one-out refits (one fit per row)");
  command.footer(std::string(kCsvHelp) + scenarios::describe_calibration_parameters());
}

bool measured_calibration_asked(const CLI::App& command) {
  return given(command, "--measured");
}

void refuse_measured_only_options(const CLI::App& command) {
  const std::string context = "without --measured (it is for the fit to measured runs)";
  for (const char* option : {"--fit", "--predict", "--no-leave-one-out"}) refuse_inert(command, option, false, context);
}

void run_measured_calibration_command(const MeasuredCalibrateOptions& o, const ScenarioOptions& scenario,
                                      const std::string& out_file, bool json) {
  if (!out_file.empty()) static_cast<void>(scenarios::checked_output_file(out_file, "--out"));
  scenarios::MeasuredCalibrationRequest request;
  request.csv = o.csv;
  request.base = resolve_scenario(scenario);
  request.fit = o.fit;
  request.predict_csv = o.predict_csv;
  request.leave_one_out = !o.no_leave_one_out;
  const scenarios::MeasuredCalibrationReport report = scenarios::run_measured_calibration(request);
  // Rendered before anything is written, so a failure leaves no partial output.
  const std::string text = json ? scenarios::to_json(report) : scenarios::to_text(report);
  if (!out_file.empty()) {
    scenarios::write_output_file(out_file, scenarios::to_calibration_toml(report, fitted_at()), "--out");
  }
  std::cout << text << std::flush;
}

}  // namespace megasim::cli
