#include "scenarios/studies/validate_verdict.h"

#include <cmath>
#include <numbers>

#include "sim/error.h"
#include "sim/stats.h"

namespace megasim::scenarios {
namespace {

// The standard normal's 97.5% quantile and its interquartile range (2 x 0.6744898).
constexpr double kZ95 = 1.959964;
constexpr double kNormalIqrSigmas = 1.348980;

}  // namespace

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kWithin:
      return "within";
    case Verdict::kOutside:
      return "outside";
    case Verdict::kInconclusive:
      return "inconclusive";
  }
  return "unknown";
}

double relative_spread_percent(std::span<const double> seconds) {
  if (seconds.size() < 2) return 0;
  const double median = sim::percentile(seconds, 50);
  MEGASIM_ASSERT(median > 0, "the spread of times whose median is not positive");
  return (sim::percentile(seconds, 75) - sim::percentile(seconds, 25)) / median * 100;
}

double median_half_width_percent(std::span<const double> seconds) {
  if (seconds.size() < 2) return 0;
  const double sigma = relative_spread_percent(seconds) / kNormalIqrSigmas;
  return kZ95 * std::sqrt(std::numbers::pi / 2) * sigma / std::sqrt(static_cast<double>(seconds.size()));
}

ValidationVerdict judge(double error_percent, std::span<const double> measured_s, std::span<const double> predicted_s,
                        double bound_percent) {
  MEGASIM_ASSERT(!measured_s.empty(), "a verdict without a measured iteration");
  MEGASIM_ASSERT(bound_percent > 0, "a verdict needs a positive bound");
  ValidationVerdict v;
  v.bound_percent = bound_percent;
  v.error_percent = error_percent;
  v.measured_count = static_cast<int>(measured_s.size());
  v.measured_spread_percent = relative_spread_percent(measured_s);
  v.predicted_spread_percent = relative_spread_percent(predicted_s);
  v.uncertainty_percent = std::hypot(median_half_width_percent(measured_s), median_half_width_percent(predicted_s));
  const double off = std::abs(error_percent);
  if (v.measured_count < kMinIterationsForSpread) {
    v.verdict = Verdict::kInconclusive;
  } else if (off > bound_percent + v.uncertainty_percent) {
    v.verdict = Verdict::kOutside;
  } else if (off <= bound_percent && v.uncertainty_percent <= bound_percent) {
    v.verdict = Verdict::kWithin;
  } else {
    v.verdict = Verdict::kInconclusive;
  }
  return v;
}

}  // namespace megasim::scenarios
