#include "scenarios/studies/calibrate/measured_calibration_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include "scenarios/config/device.h"
#include "scenarios/studies/calibrate/calibration_parameters.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/thread_pool.h"
#include "sim/error.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

using Parameters = std::vector<const CalibrationParameter*>;

// One measured run ready to simulate: its scenario and cluster (built once, shared by every fit).
struct RowModel {
  Scenario scenario;
  std::shared_ptr<const topo::Topology> topology;
  std::string label;  // "FILE:LINE (NAME)" for messages
};

std::vector<RowModel> row_models(const MeasuredTable& table, const Scenario& base) {
  std::vector<RowModel> rows;
  for (const MeasuredRow& row : table.rows) {
    Scenario s = row_scenario(table, row, base);
    auto topology = std::make_shared<const topo::Topology>(topo::Topology::build(effective_cluster(s)));
    rows.push_back({std::move(s), std::move(topology), fmt::format("{}:{} ({})", table.source, row.line, row.name)});
  }
  return rows;
}

double predicted_target(const RowModel& row, const Parameters& params, const std::vector<double>& x,
                        MeasuredTarget target) {
  RunOptions options;
  options.straggler_whatifs = false;
  options.topology = row.topology;
  options.adjust_device = [&](DeviceModel& d) {
    for (std::size_t j = 0; j < params.size(); ++j) params[j]->set(d, x[j]);
  };
  const IterationReport report = run_iteration_study(row.scenario, std::move(options)).report;
  return target == MeasuredTarget::kMfu ? report.mfu : report.iteration_time_s;
}

// Predictions of rows[which[i]] with the parameters at x, `threads` rows at once. A row's error is
// rethrown (the first by position) with the row's file and line.
std::vector<double> predict(const std::vector<RowModel>& rows, const std::vector<std::size_t>& which,
                            const Parameters& params, const std::vector<double>& x, MeasuredTarget target,
                            unsigned threads) {
  std::vector<double> out(which.size(), 0.0);
  for_each_index(which.size(), threads, [&](std::size_t i) {
    const RowModel& row = rows[which[i]];
    try {
      out[i] = predicted_target(row, params, x, target);
    } catch (const sim::ConfigError& e) {
      throw sim::ConfigError(row.label + ": " + e.what());
    }
  });
  return out;
}

std::vector<std::size_t> all_rows(std::size_t n) {
  std::vector<std::size_t> which(n);
  for (std::size_t i = 0; i < n; ++i) which[i] = i;
  return which;
}

// The fit of the `free` parameters on rows[which], the others at `x` (held), from `x`.
struct Fit {
  std::vector<double> x;
  FitOutcome outcome;  // over the free parameters only
};

class Fitter {
 public:
  Fitter(const std::vector<RowModel>& rows, const std::vector<double>& measured, Parameters params,
         MeasuredTarget target, unsigned threads)
      : rows_(rows), measured_(measured), params_(std::move(params)), target_(target), threads_(threads) {}

  BoundedProblem problem(const std::vector<std::size_t>& which, const std::vector<bool>& free,
                         const std::vector<double>& held_at) const {
    BoundedProblem p;
    std::vector<std::size_t> index;
    for (std::size_t j = 0; j < params_.size(); ++j) {
      if (!free[j]) continue;
      index.push_back(j);
      p.lower.push_back(params_[j]->lower);
      p.upper.push_back(params_[j]->upper);
    }
    p.residuals = [this, which, index, held_at](const std::vector<double>& sub) {
      std::vector<double> x = held_at;
      for (std::size_t c = 0; c < index.size(); ++c) x[index[c]] = sub[c];
      const std::vector<double> predicted = predict(rows_, which, params_, x, target_, threads_);
      std::vector<double> r(which.size());
      for (std::size_t i = 0; i < which.size(); ++i) r[i] = std::log(predicted[i] / measured_[which[i]]);
      return r;
    };
    return p;
  }

  Fit fit(const std::vector<std::size_t>& which, const std::vector<bool>& free,
          const std::vector<double>& start) const {
    const BoundedProblem p = problem(which, free, start);
    std::vector<double> sub;
    for (std::size_t j = 0; j < params_.size(); ++j) {
      if (free[j]) sub.push_back(start[j]);
    }
    Fit f{start, fit_bounded(p, sub, FitSettings{})};
    for (std::size_t j = 0, c = 0; j < params_.size(); ++j) {
      if (free[j]) f.x[j] = f.outcome.x[c++];
    }
    return f;
  }

  [[nodiscard]] const Parameters& params() const { return params_; }

 private:
  const std::vector<RowModel>& rows_;
  const std::vector<double>& measured_;
  Parameters params_;
  MeasuredTarget target_;
  unsigned threads_;
};

Parameters chosen_parameters(const std::vector<std::string>& names, std::size_t rows) {
  Parameters params;
  for (const std::string& name : names) {
    const CalibrationParameter& p = find_calibration_parameter(name);
    if (std::find(params.begin(), params.end(), &p) != params.end()) {
      throw sim::ConfigError("--fit", name, "each parameter once");
    }
    params.push_back(&p);
  }
  if (params.empty()) throw sim::ConfigError("--fit", "\"\"", "at least one parameter name");
  if (params.size() > rows) {
    throw sim::ConfigError("--fit", fmt::format("({} parameters)", params.size()),
                           fmt::format("at most {} parameter{}: never more free parameters than measured rows, "
                                       "and the CSV has {} row{}",
                                       rows, rows == 1 ? "" : "s", rows, rows == 1 ? "" : "s"));
  }
  return params;
}

// The rows' common prior; throws when they disagree on the calibration file, GPU or a prior.
std::vector<double> common_prior(const std::vector<RowModel>& rows, const Parameters& params) {
  const Scenario& first = rows.front().scenario;
  const DeviceModel device = device_model(first);
  std::vector<double> prior;
  for (const CalibrationParameter* p : params) prior.push_back(p->get(device));
  for (const RowModel& row : rows) {
    const Scenario& s = row.scenario;
    if (s.calibration_file != first.calibration_file) {
      throw sim::ConfigError(
          row.label + ": calibration.file", "\"" + s.calibration_file + "\"",
          "the file of the other rows, \"" + first.calibration_file + "\": one calibration file is fitted to all rows");
    }
    if (s.gpu != first.gpu) {
      throw sim::ConfigError(row.label + ": cluster.gpu", s.gpu,
                             "the GPU of the other rows, " + first.gpu + ": one calibration describes one device");
    }
    const DeviceModel d = device_model(s);
    for (std::size_t j = 0; j < params.size(); ++j) {
      if (params[j]->get(d) != prior[j]) {
        throw sim::ConfigError(row.label + ": " + std::string(params[j]->name), fmt::format("{}", params[j]->get(d)),
                               fmt::format("the value of the other rows, {}: the fit starts every row from one "
                                           "prior (remove the row's override of it)",
                                           prior[j]));
      }
    }
  }
  return prior;
}

std::vector<double> measured_of(const MeasuredTable& table) {
  std::vector<double> m;
  for (const MeasuredRow& row : table.rows) m.push_back(row.measured);
  return m;
}

// The rows' calibration file and GPU, which --predict rows must share with the measured rows.
void require_same_device(const std::vector<RowModel>& rows, const std::vector<RowModel>& extra,
                         const Parameters& params, const std::vector<double>& prior) {
  const RowModel& first = extra.front();
  if (common_prior(extra, params) != prior ||
      first.scenario.calibration_file != rows.front().scenario.calibration_file ||
      first.scenario.gpu != rows.front().scenario.gpu) {
    throw sim::ConfigError(
        first.label,
        "(calibration.file " + first.scenario.calibration_file + ", cluster.gpu " + first.scenario.gpu + ")",
        "the measured rows' calibration file, GPU and prior values, which the fit replaces");
  }
}

// The fit with the parameters the rows cannot identify held at the prior.
struct Identified {
  Fit fit;
  std::vector<Weakness> weakness;
  std::vector<bool> free;
  Jacobian prior_sensitivity;  // rows × every chosen parameter, at the (clamped) prior
  std::vector<double> singular_values;
  int evaluations = 0;
};

std::vector<double> sub_vector(const std::vector<double>& v, const std::vector<bool>& keep) {
  std::vector<double> out;
  for (std::size_t j = 0; j < v.size(); ++j) {
    if (keep[j]) out.push_back(v[j]);
  }
  return out;
}

// Identifiability at the prior over every chosen parameter; then fits the identifiable ones, and
// when the Jacobian at the fitted values shows more to be unidentifiable, holds them too and refits.
// `at_start`: the residuals at `start`.
Identified fit_identifiable(const Fitter& fitter, std::size_t rows, const std::vector<double>& start,
                            const std::vector<double>& at_start, const std::vector<double>& lower,
                            const std::vector<double>& upper) {
  const std::size_t k = start.size();
  const std::vector<std::size_t> everything = all_rows(rows);
  Identified id{{start, {}}, {}, std::vector<bool>(k, true), {}, {}, 0};
  const BoundedProblem whole = fitter.problem(everything, id.free, start);
  const Jacobian j0 = difference_jacobian(whole, start, at_start, FitSettings{}, &id.evaluations);
  id.prior_sensitivity = relative_sensitivities(j0, start, lower, upper);
  id.weakness = identifiability(id.prior_sensitivity, IdentifiabilitySettings{}).weakness;
  for (std::size_t j = 0; j < k; ++j) id.free[j] = id.weakness[j] == Weakness::kNone;
  for (std::size_t pass = 0; pass < k && std::find(id.free.begin(), id.free.end(), true) != id.free.end(); ++pass) {
    id.fit = fitter.fit(everything, id.free, start);
    id.evaluations += id.fit.outcome.evaluations;
    const Identifiability at_fit =
        identifiability(relative_sensitivities(id.fit.outcome.jacobian, sub_vector(id.fit.x, id.free),
                                               sub_vector(lower, id.free), sub_vector(upper, id.free)),
                        IdentifiabilitySettings{});
    id.singular_values = at_fit.singular_values;
    bool changed = false;
    for (std::size_t j = 0, c = 0; j < k; ++j) {
      if (!id.free[j]) continue;
      if (at_fit.weakness[c] != Weakness::kNone) {
        id.weakness[j] = at_fit.weakness[c];
        id.free[j] = false;
        changed = true;
      }
      ++c;
    }
    if (!changed) break;
    id.fit = Fit{start, {}};
    id.singular_values.clear();
  }
  return id;
}

std::vector<FittedParameter> fitted_parameters(const Parameters& params, const std::vector<double>& prior,
                                               const Identified& id) {
  std::vector<FittedParameter> out;
  for (std::size_t j = 0; j < params.size(); ++j) {
    const CalibrationParameter& p = *params[j];
    FittedParameter f{std::string(p.name),
                      std::string(p.section),
                      std::string(p.unit),
                      p.lower,
                      p.upper,
                      prior[j],
                      id.free[j] ? id.fit.x[j] : prior[j],
                      id.weakness[j],
                      !id.free[j],
                      false,
                      0.0};
    f.at_bound = id.free[j] && (f.fitted <= p.lower || f.fitted >= p.upper);
    for (const auto& row : id.prior_sensitivity) f.sensitivity = std::max(f.sensitivity, std::abs(row[j]));
    out.push_back(f);
  }
  return out;
}

// Each row predicted by a fit of the free parameters to the other rows, from `start`; or the reason
// there is no leave-one-out.
std::string leave_one_out(const Fitter& fitter, const std::vector<RowModel>& rows, const std::vector<bool>& free,
                          const std::vector<double>& start, MeasuredTarget target, unsigned threads,
                          std::vector<CalibratedRow>& report_rows) {
  const auto free_count = static_cast<std::size_t>(std::count(free.begin(), free.end(), true));
  if (free_count == 0) return "no parameter was fitted";
  if (rows.size() <= free_count) {
    return fmt::format("needs more rows than the {} fitted parameter{}", free_count, free_count == 1 ? "" : "s");
  }
  for (std::size_t out = 0; out < rows.size(); ++out) {
    std::vector<std::size_t> others;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i != out) others.push_back(i);
    }
    const Fit loo = fitter.fit(others, free, start);
    report_rows[out].leave_one_out = predict(rows, {out}, fitter.params(), loo.x, target, threads).front();
  }
  return "";
}

MeasuredTable read_predict_rows(const MeasuredCalibrationRequest& request, MeasuredTarget target) {
  if (request.predict_csv.empty()) return {};
  MeasuredTable more = read_measured_csv(request.predict_csv, "--predict");
  if (more.target != target) {
    throw sim::ConfigError("--predict", request.predict_csv,
                           fmt::format("a CSV whose target is {}, as the measured rows'", to_string(target)));
  }
  return more;
}

}  // namespace

double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

MeasuredCalibrationReport run_measured_calibration(const MeasuredCalibrationRequest& request) {
  const MeasuredTable table = read_measured_csv(request.csv, "--measured");
  const MeasuredTable more = read_predict_rows(request, table.target);  // checked before any simulation
  const Parameters params =
      chosen_parameters(request.fit.empty() ? default_fit_parameters() : request.fit, table.rows.size());
  const unsigned threads = request.threads > 0 ? request.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::vector<RowModel> rows = row_models(table, request.base);
  const std::vector<double> measured = measured_of(table);
  const std::vector<double> prior = common_prior(rows, params);
  const std::vector<RowModel> extra = more.rows.empty() ? std::vector<RowModel>{} : row_models(more, request.base);
  if (!extra.empty()) require_same_device(rows, extra, params, prior);
  const Fitter fitter(rows, measured, params, table.target, threads);

  MeasuredCalibrationReport report;
  report.csv = request.csv;
  report.predict_csv = request.predict_csv;
  report.target = table.target;
  report.gpu = rows.front().scenario.gpu;
  report.calibration_file = rows.front().scenario.calibration_file;

  const std::vector<double> before = predict(rows, all_rows(rows.size()), params, prior, table.target, threads);
  std::vector<double> start = prior, lower, upper;
  for (std::size_t j = 0; j < params.size(); ++j) {
    lower.push_back(params[j]->lower);
    upper.push_back(params[j]->upper);
    start[j] = std::clamp(prior[j], lower[j], upper[j]);
  }
  std::vector<double> at_start(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) at_start[i] = std::log(before[i] / measured[i]);
  if (start != prior)
    at_start = fitter.problem(all_rows(rows.size()), std::vector<bool>(params.size(), true), start).residuals(start);

  const Identified id = fit_identifiable(fitter, rows.size(), start, at_start, lower, upper);
  report.parameters = fitted_parameters(params, prior, id);
  report.singular_values = id.singular_values;
  report.iterations = id.fit.outcome.iterations;
  report.evaluations = id.evaluations + 1;
  report.converged = id.fit.outcome.converged || std::find(id.free.begin(), id.free.end(), true) == id.free.end();

  std::vector<double> fitted_x;
  for (const FittedParameter& p : report.parameters) fitted_x.push_back(p.fitted);
  const std::vector<double> after = predict(rows, all_rows(rows.size()), params, fitted_x, table.target, threads);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    report.rows.push_back({table.rows[i].name, table.rows[i].line, true, measured[i], before[i], after[i], {}});
  }
  report.leave_one_out_note = request.leave_one_out
                                  ? leave_one_out(fitter, rows, id.free, start, table.target, threads, report.rows)
                                  : "not asked for";
  if (!extra.empty()) {
    const std::vector<double> b = predict(extra, all_rows(extra.size()), params, prior, more.target, threads);
    const std::vector<double> a = predict(extra, all_rows(extra.size()), params, fitted_x, more.target, threads);
    for (std::size_t i = 0; i < extra.size(); ++i) {
      report.rows.push_back({more.rows[i].name, more.rows[i].line, false, more.rows[i].measured, b[i], a[i], {}});
    }
  }
  return report;
}

}  // namespace megasim::scenarios
