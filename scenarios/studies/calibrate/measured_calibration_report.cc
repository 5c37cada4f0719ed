// The report of `megasim calibrate --measured` as text and JSON, and the fitted calibration file.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <sstream>

#include "scenarios/config/input_file.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/report/build_info.h"
#include "scenarios/studies/calibrate/measured_calibration_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

std::optional<double> mean_abs(const std::vector<double>& errors) {
  if (errors.empty()) return std::nullopt;
  double sum = 0;
  for (const double e : errors) sum += std::abs(e);
  return sum / static_cast<double>(errors.size());
}

std::string percent(std::optional<double> x) {
  return x ? fmt::format("{:.1f}%", 100 * *x) : std::string("-");
}

std::string signed_percent(double x) {
  return fmt::format("{:+.1f}%", 100 * x);
}

void optional_field(JsonWriter& w, std::string_view key, std::optional<double> x) {
  w.key(key);
  if (x)
    w.value(*x);
  else
    w.null();
}

std::string fitted_names(const MeasuredCalibrationReport& r) {
  std::string names;
  for (const CalibratedRow& row : r.rows) {
    if (row.fitted) names += (names.empty() ? "" : ", ") + row.name;
  }
  return names;
}

std::size_t fitted_count(const MeasuredCalibrationReport& r) {
  std::size_t n = 0;
  for (const CalibratedRow& row : r.rows) n += row.fitted ? 1 : 0;
  return n;
}

}  // namespace

std::optional<double> mean_abs_error(const MeasuredCalibrationReport& report, bool fitted, bool before) {
  std::vector<double> errors;
  for (const CalibratedRow& row : report.rows) {
    if (row.fitted == fitted) errors.push_back(relative_error(before ? row.before : row.after, row.measured));
  }
  return mean_abs(errors);
}

std::optional<double> mean_abs_leave_one_out_error(const MeasuredCalibrationReport& report) {
  std::vector<double> errors;
  for (const CalibratedRow& row : report.rows) {
    if (row.leave_one_out) errors.push_back(relative_error(*row.leave_one_out, row.measured));
  }
  return mean_abs(errors);
}

std::string parameter_status(const FittedParameter& p) {
  if (p.weakness == Weakness::kInsensitive) return "held: no row is sensitive to it";
  if (p.weakness == Weakness::kCollinear) return "held: collinear with the other parameters";
  if (p.at_bound) return p.fitted <= p.lower ? "at lower bound" : "at upper bound";
  return "fitted";
}

std::string to_text(const MeasuredCalibrationReport& r) {
  std::string out =
      fmt::format("calibration to measured runs: {} (target {}), {}, calibration {}\n", r.csv, to_string(r.target),
                  r.gpu, r.calibration_file.empty() ? "the public defaults" : r.calibration_file);
  out += fmt::format("{:<40} {:>15} {:>12} {:>12} {:>12}  {}\n", "parameter", "bounds", "prior", "fitted",
                     "sensitivity", "status");
  for (const FittedParameter& p : r.parameters) {
    out += fmt::format("{:<40} {:>15} {:>12.6g} {:>12.6g} {:>12.3g}  {}\n", p.name,
                       fmt::format("[{:g}, {:g}]", p.lower, p.upper), p.prior, p.fitted, p.sensitivity,
                       parameter_status(p));
  }
  std::string sigma;
  for (const double s : r.singular_values) sigma += (sigma.empty() ? "" : ", ") + fmt::format("{:.3g}", s);
  out += fmt::format("fit: {} iterations, {} evaluations of every row, {}; singular values {}\n", r.iterations,
                     r.evaluations, r.converged ? "converged" : "stopped at the iteration limit",
                     sigma.empty() ? "-" : sigma);
  const bool time = r.target == MeasuredTarget::kIterationTime;
  out += fmt::format("{:<24} {:>7} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9}\n", "row", "role",
                     time ? "measured" : "meas MFU", "before", "after", "err bef", "err aft", "LOO", "err LOO");
  for (const CalibratedRow& row : r.rows) {
    const auto value = [&](double x) { return time ? fmt::format("{:.4g}", x) : fmt::format("{:.4f}", x); };
    out += fmt::format("{:<24} {:>7} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9}\n", row.name,
                       row.fitted ? "fit" : "predict", value(row.measured), value(row.before), value(row.after),
                       signed_percent(relative_error(row.before, row.measured)),
                       signed_percent(relative_error(row.after, row.measured)),
                       row.leave_one_out ? value(*row.leave_one_out) : "-",
                       row.leave_one_out ? signed_percent(relative_error(*row.leave_one_out, row.measured)) : "-");
  }
  out += fmt::format("fitted rows: mean |error| {} before, {} after; leave-one-out mean |error| {}{}\n",
                     percent(mean_abs_error(r, true, true)), percent(mean_abs_error(r, true, false)),
                     percent(mean_abs_leave_one_out_error(r)),
                     r.leave_one_out_note.empty() ? "" : " (" + r.leave_one_out_note + ")");
  if (mean_abs_error(r, false, false)) {
    out += fmt::format("predicted rows ({}): mean |error| {} before, {} after\n", r.predict_csv,
                       percent(mean_abs_error(r, false, true)), percent(mean_abs_error(r, false, false)));
  }
  return out;
}

std::string to_json(const MeasuredCalibrationReport& r) {
  JsonWriter w;
  w.begin_object();
  w.field("csv", r.csv);
  w.key("predict_csv");
  if (r.predict_csv.empty())
    w.null();
  else
    w.value(r.predict_csv);
  w.field("target", to_string(r.target));
  w.field("gpu", r.gpu);
  w.key("calibration_file");
  if (r.calibration_file.empty())
    w.null();
  else
    w.value(r.calibration_file);
  w.key("parameters").begin_array();
  for (const FittedParameter& p : r.parameters) {
    w.begin_object().field("name", p.name).field("section", p.section).field("unit", p.unit);
    w.field("lower", p.lower).field("upper", p.upper).field("prior", p.prior).field("fitted", p.fitted);
    w.field("status", parameter_status(p)).field("sensitivity", p.sensitivity).end_object();
  }
  w.end_array();
  w.key("rows").begin_array();
  for (const CalibratedRow& row : r.rows) {
    w.begin_object().field("name", row.name).field("line", static_cast<std::int64_t>(row.line));
    w.field("role", row.fitted ? "fit" : "predict").field("measured", row.measured);
    w.field("before", row.before).field("after", row.after);
    w.field("error_before", relative_error(row.before, row.measured));
    w.field("error_after", relative_error(row.after, row.measured));
    optional_field(w, "leave_one_out", row.leave_one_out);
    optional_field(
        w, "leave_one_out_error",
        row.leave_one_out ? std::optional<double>(relative_error(*row.leave_one_out, row.measured)) : std::nullopt);
    w.end_object();
  }
  w.end_array();
  w.key("singular_values").begin_array();
  for (const double s : r.singular_values) w.value(s);
  w.end_array();
  w.field("iterations", r.iterations).field("evaluations", r.evaluations).field("converged", r.converged);
  optional_field(w, "mean_abs_error_before", mean_abs_error(r, true, true));
  optional_field(w, "mean_abs_error_after", mean_abs_error(r, true, false));
  optional_field(w, "leave_one_out_mean_abs_error", mean_abs_leave_one_out_error(r));
  w.key("leave_one_out_note");
  if (r.leave_one_out_note.empty())
    w.null();
  else
    w.value(r.leave_one_out_note);
  optional_field(w, "predict_mean_abs_error_before", mean_abs_error(r, false, true));
  optional_field(w, "predict_mean_abs_error_after", mean_abs_error(r, false, false));
  w.end_object();
  return w.str() + "\n";
}

std::string to_calibration_toml(const MeasuredCalibrationReport& r, const std::string& fitted_at) {
  toml::table root;
  if (!r.calibration_file.empty()) {
    const std::string text = read_input_file(r.calibration_file, "calibration.file", "a readable calibration file");
    try {
      root = toml::parse(text, r.calibration_file);
    } catch (const toml::parse_error& e) {
      throw sim::ConfigError(r.calibration_file + ": malformed calibration TOML: " + std::string(e.description()));
    }
  }
  std::string header = fmt::format(
      "# Fitted by `megasim calibrate --measured {}` (megasim {}, commit {}) at {}\n"
      "# to the {} of {} measured run{}: {}.\n"
      "# Starts from {} (its comments are not copied).\n",
      r.csv, megasim_version(), megasim_commit(), fitted_at, to_string(r.target), fitted_count(r),
      fitted_count(r) == 1 ? "" : "s", fitted_names(r),
      r.calibration_file.empty() ? "the public defaults" : r.calibration_file);
  for (const FittedParameter& p : r.parameters) {
    header +=
        fmt::format("#   {}.{}: {:.6g} -> {:.6g} ({})\n", p.section, p.name, p.prior, p.fitted, parameter_status(p));
    if (p.held) continue;
    toml::table* section = root[p.section].as_table();
    if (section == nullptr) {
      root.insert_or_assign(p.section, toml::table{});
      section = root[p.section].as_table();
    }
    section->insert_or_assign(p.name, p.fitted);
  }
  header += fmt::format("# Fitted rows' mean |error| {} before, {} after; leave-one-out mean |error| {}.\n",
                        percent(mean_abs_error(r, true, true)), percent(mean_abs_error(r, true, false)),
                        percent(mean_abs_leave_one_out_error(r)));
  std::ostringstream body;
  body << root << "\n";
  return header + body.str();
}

}  // namespace megasim::scenarios
