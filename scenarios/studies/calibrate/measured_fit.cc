#include "scenarios/studies/calibrate/measured_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

double half_square_sum(const std::vector<double>& r) {
  double sum = 0;
  for (const double v : r) sum += v * v;
  return sum / 2;
}

std::vector<double> clamped(std::vector<double> x, const BoundedProblem& p) {
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = std::clamp(x[j], p.lower[j], p.upper[j]);
  return x;
}

std::vector<double> evaluate(const BoundedProblem& p, const std::vector<double>& x, int* evaluations) {
  ++*evaluations;
  std::vector<double> r = p.residuals(x);
  for (const double v : r) {
    if (!std::isfinite(v)) throw sim::ConfigError("a calibration fit's prediction is not finite");
  }
  return r;
}

// One Levenberg-Marquardt step of the free parameters: (JᵀJ + λ·diag(JᵀJ)) δ = -Jᵀr in unit
// coordinates (ranges scaled to 1), the diagonal floored so that a flat direction gets a finite step.
std::vector<double> lm_step(const Eigen::MatrixXd& ju, const Eigen::VectorXd& r, const std::vector<bool>& free,
                            double lambda) {
  const auto k = ju.cols();
  std::vector<Eigen::Index> cols;
  for (Eigen::Index j = 0; j < k; ++j) {
    if (free[static_cast<std::size_t>(j)]) cols.push_back(j);
  }
  Eigen::MatrixXd jf(ju.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t c = 0; c < cols.size(); ++c) jf.col(static_cast<Eigen::Index>(c)) = ju.col(cols[c]);
  Eigen::MatrixXd a = jf.transpose() * jf;
  const double floor = 1e-12 * std::max(1e-300, a.diagonal().maxCoeff());
  for (Eigen::Index j = 0; j < a.rows(); ++j) a(j, j) += lambda * std::max(a(j, j), floor) + floor;
  const Eigen::VectorXd delta = a.ldlt().solve(-(jf.transpose() * r));
  std::vector<double> step(static_cast<std::size_t>(k), 0.0);
  for (std::size_t c = 0; c < cols.size(); ++c)
    step[static_cast<std::size_t>(cols[c])] = delta(static_cast<Eigen::Index>(c));
  return step;
}

Eigen::MatrixXd unit_jacobian(const Jacobian& j, const BoundedProblem& p) {
  Eigen::MatrixXd m(static_cast<Eigen::Index>(j.size()), static_cast<Eigen::Index>(p.lower.size()));
  for (std::size_t i = 0; i < j.size(); ++i) {
    for (std::size_t c = 0; c < p.lower.size(); ++c) {
      m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = j[i][c] * (p.upper[c] - p.lower[c]);
    }
  }
  return m;
}

}  // namespace

Jacobian difference_jacobian(const BoundedProblem& problem, const std::vector<double>& x,
                             const std::vector<double>& at_x, const FitSettings& settings, int* evaluations) {
  Jacobian jac(at_x.size(), std::vector<double>(x.size(), 0.0));
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double range = problem.upper[j] - problem.lower[j];
    double h = settings.difference_step * range;
    if (x[j] + h > problem.upper[j]) h = -h;
    std::vector<double> moved = x;
    moved[j] += h;
    const std::vector<double> r = evaluate(problem, moved, evaluations);
    for (std::size_t i = 0; i < r.size(); ++i) jac[i][j] = (r[i] - at_x[i]) / h;
  }
  return jac;
}

FitOutcome fit_bounded(const BoundedProblem& problem, const std::vector<double>& start, const FitSettings& settings) {
  MEGASIM_ASSERT(problem.lower.size() == start.size() && problem.upper.size() == start.size(),
                 "a fit's bounds and start differ in length");
  FitOutcome out;
  out.x = clamped(start, problem);
  out.residuals = evaluate(problem, out.x, &out.evaluations);
  double cost = half_square_sum(out.residuals);
  double lambda = 1e-3;
  bool jacobian_current = false;
  for (; out.iterations < settings.max_iterations && !out.converged; ++out.iterations) {
    out.jacobian = difference_jacobian(problem, out.x, out.residuals, settings, &out.evaluations);
    jacobian_current = true;
    const Eigen::MatrixXd ju = unit_jacobian(out.jacobian, problem);
    const Eigen::VectorXd r = Eigen::Map<const Eigen::VectorXd>(out.residuals.data(), ju.rows());
    const Eigen::VectorXd gradient = ju.transpose() * r;
    std::vector<bool> free(out.x.size());
    bool any_free = false;
    for (std::size_t j = 0; j < out.x.size(); ++j) {
      const auto g = gradient(static_cast<Eigen::Index>(j));
      const bool pinned_low = out.x[j] <= problem.lower[j] && g > 0;
      const bool pinned_high = out.x[j] >= problem.upper[j] && g < 0;
      free[j] = !pinned_low && !pinned_high && g != 0;
      any_free = any_free || free[j];
    }
    if (!any_free || cost == 0) {
      out.converged = true;
      break;
    }
    bool accepted = false;
    for (int attempt = 0; attempt < 12 && !accepted; ++attempt) {
      const std::vector<double> step = lm_step(ju, r, free, lambda);
      std::vector<double> trial = out.x;
      for (std::size_t j = 0; j < trial.size(); ++j) trial[j] += step[j] * (problem.upper[j] - problem.lower[j]);
      trial = clamped(trial, problem);
      if (trial == out.x) break;
      std::vector<double> at_trial = evaluate(problem, trial, &out.evaluations);
      const double trial_cost = half_square_sum(at_trial);
      if (trial_cost < cost) {
        accepted = true;
        out.converged = cost - trial_cost <= settings.relative_tolerance * cost;
        out.x = std::move(trial);
        out.residuals = std::move(at_trial);
        cost = trial_cost;
        lambda = std::max(lambda / 3, 1e-12);
        jacobian_current = false;
      } else {
        lambda *= 4;
      }
    }
    if (!accepted) out.converged = true;  // no step lowers the cost: a (bounded) minimum
  }
  if (!jacobian_current) out.jacobian = difference_jacobian(problem, out.x, out.residuals, settings, &out.evaluations);
  return out;
}

Jacobian relative_sensitivities(const Jacobian& jacobian, const std::vector<double>& x,
                                const std::vector<double>& lower, const std::vector<double>& upper) {
  Jacobian s = jacobian;
  for (auto& row : s) {
    for (std::size_t j = 0; j < x.size(); ++j) row[j] *= std::max(std::abs(x[j]), 0.01 * (upper[j] - lower[j]));
  }
  return s;
}

Identifiability identifiability(const Jacobian& sensitivities, const IdentifiabilitySettings& settings) {
  const std::size_t k = sensitivities.empty() ? 0 : sensitivities.front().size();
  Identifiability out;
  out.weakness.assign(k, Weakness::kNone);
  std::vector<std::size_t> kept;
  for (std::size_t j = 0; j < k; ++j) {
    double largest = 0;
    for (const auto& row : sensitivities) largest = std::max(largest, std::abs(row[j]));
    if (largest < settings.min_sensitivity) {
      out.weakness[j] = Weakness::kInsensitive;
    } else {
      kept.push_back(j);
    }
  }
  const auto rows = static_cast<Eigen::Index>(sensitivities.size());
  while (!kept.empty()) {
    Eigen::MatrixXd m(rows, static_cast<Eigen::Index>(kept.size()));
    for (Eigen::Index i = 0; i < rows; ++i) {
      for (std::size_t c = 0; c < kept.size(); ++c) {
        m(i, static_cast<Eigen::Index>(c)) = sensitivities[static_cast<std::size_t>(i)][kept[c]];
      }
    }
    for (Eigen::Index c = 0; c < m.cols(); ++c) m.col(c).normalize();
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeFullV);
    const Eigen::VectorXd sigma = svd.singularValues();
    // Fewer rows than kept parameters leave singular values of zero that the SVD does not list.
    const double smallest = m.cols() > rows ? 0.0 : sigma(sigma.size() - 1);
    if (kept.size() == 1 || smallest >= settings.min_singular_value) {
      out.singular_values.assign(sigma.data(), sigma.data() + sigma.size());
      break;
    }
    const Eigen::VectorXd v = svd.matrixV().col(m.cols() - 1);
    std::size_t drop = 0;
    for (std::size_t c = 1; c < kept.size(); ++c) {
      if (std::abs(v(static_cast<Eigen::Index>(c))) >= std::abs(v(static_cast<Eigen::Index>(drop))) - 1e-12) drop = c;
    }
    out.weakness[kept[drop]] = Weakness::kCollinear;
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  return out;
}

}  // namespace megasim::scenarios
