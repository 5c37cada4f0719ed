#include "scenarios/validate_verdict.h"

#include <cmath>

#include "sim/error.h"
#include "sim/stats.h"

namespace megasim::scenarios {

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

ValidationVerdict judge(double error_percent, std::span<const double> measured_s, std::span<const double> predicted_s,
                        double bound_percent) {
  MEGASIM_ASSERT(!measured_s.empty(), "a verdict without a measured iteration");
  MEGASIM_ASSERT(bound_percent > 0, "a verdict needs a positive bound");
  ValidationVerdict v;
  v.bound_percent = bound_percent;
  v.error_percent = error_percent;
  v.measured_spread_percent = relative_spread_percent(measured_s);
  v.predicted_spread_percent = relative_spread_percent(predicted_s);
  v.spread_percent = std::hypot(v.measured_spread_percent, v.predicted_spread_percent);
  const double off = std::abs(error_percent);
  if (v.spread_percent <= bound_percent) {
    v.verdict = off <= bound_percent ? Verdict::kWithin : Verdict::kOutside;
  } else {
    v.verdict = off > bound_percent + v.spread_percent ? Verdict::kOutside : Verdict::kInconclusive;
  }
  return v;
}

}  // namespace megasim::scenarios
