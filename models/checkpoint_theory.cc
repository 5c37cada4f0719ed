#include "models/checkpoint_theory.h"

#include <cmath>

#include "sim/error.h"

namespace megasim::models {

double young_interval_s(double delta_s, double mtbf_s) {
  MEGASIM_ASSERT(delta_s >= 0 && mtbf_s > 0, "Young's interval needs delta >= 0 and M > 0");
  return std::sqrt(2 * delta_s * mtbf_s);
}

double daly_interval_s(double delta_s, double mtbf_s) {
  MEGASIM_ASSERT(delta_s >= 0 && mtbf_s > 0, "Daly's interval needs delta >= 0 and M > 0");
  if (delta_s >= 2 * mtbf_s) return mtbf_s;
  const double x = delta_s / (2 * mtbf_s);
  return std::sqrt(2 * delta_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - delta_s;
}

double expected_ettr_exponential(double tau_s, double delta_s, double restart_s, double mtbf_s) {
  MEGASIM_ASSERT(tau_s > 0 && delta_s >= 0 && restart_s >= 0 && mtbf_s > 0, "bad closed-form ETTR inputs");
  const double lambda = 1 / mtbf_s;
  return lambda * tau_s * std::exp(-lambda * restart_s) / std::expm1(lambda * (tau_s + delta_s));
}

double optimal_interval_exponential_s(double delta_s, double mtbf_s) {
  MEGASIM_ASSERT(delta_s >= 0 && mtbf_s > 0, "the optimal interval needs delta >= 0 and M > 0");
  const double lambda = 1 / mtbf_s;
  // g(tau) = e^{lambda (tau + delta)} (1 - lambda tau) - 1 is >= 0 at tau = 0, falls monotonically
  // (g' = -lambda^2 tau e^{...} < 0) and is < 0 at tau = M: the root lies in [0, M].
  const auto g = [&](double tau) { return std::exp(lambda * (tau + delta_s)) * (1 - lambda * tau) - 1; };
  double lo = 0, hi = mtbf_s;
  for (int i = 0; i < 200 && hi - lo > 1e-9 * mtbf_s; ++i) {
    const double mid = 0.5 * (lo + hi);
    (g(mid) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace megasim::models
