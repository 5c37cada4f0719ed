// Whether `megasim validate`'s error can be trusted on a machine whose timings vary (a shared host):
// the error of the prediction is held against a bound only when the timing noise leaves it
// measurable to better than the bound; otherwise the validation says that the machine could not
// tell, instead of a precise-looking number.
//
// The spread of one side is its relative interquartile range, (P75 - P25) / P50 in percent
// (sim::percentile's interpolation): of the measured iterations, and of the predictions, one per
// calibration round when the calibration was measured in rounds interleaved with the iterations
// (cli/cpu_validate.h; with a calibration file there are none and that side counts 0). Each
// side's compared value is a median of n values, whose 95% confidence half-width is
// 1.96 x sqrt(pi / 2) x sigma / sqrt(n) (the sample median's asymptotic standard error) with
// sigma = IQR / 1.349 (the normal distribution's IQR in sigmas): 1.821 x IQR / sqrt(n). The two
// sides' noise is independent, so the error's uncertainty U is the quadrature sum of the two
// half-widths. The verdict on an error e against a bound B:
//  - fewer than 3 measured iterations: inconclusive (no spread can be measured);
//  - outside when |e| > B + U: off by more than the bound even allowing for the noise;
//  - within when |e| <= B and U <= B: the error is inside the bound and the noise is small enough
//    to tell;
//  - else inconclusive: either the noise is as large as the bound, or the error passes the bound by
//    less than the noise (an error of 15.9% +- 13% cannot be told from one of 14%).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace megasim::scenarios {

enum class Verdict : std::uint8_t { kWithin, kOutside, kInconclusive };
std::string_view to_string(Verdict verdict);  // "within", "outside", "inconclusive"

// The fewest measured iterations whose spread is measured.
inline constexpr int kMinIterationsForSpread = 3;

struct ValidationVerdict {
  double bound_percent = 0;
  double error_percent = 0;
  int measured_count = 0;
  double measured_spread_percent = 0;   // IQR / median of the measured iterations
  double predicted_spread_percent = 0;  // of the rounds' predictions; 0 without rounds
  double uncertainty_percent = 0;       // the error's 95% confidence half-width
  Verdict verdict = Verdict::kInconclusive;
};

// Relative interquartile range in percent; 0 for fewer than two values. Precondition: the median
// of `seconds` is positive (asserted).
double relative_spread_percent(std::span<const double> seconds);

// 95% confidence half-width, in percent of the median, of the median of `seconds`, from their
// interquartile range as above; 0 for fewer than two values.
double median_half_width_percent(std::span<const double> seconds);

// Preconditions (asserted): `measured_s` is not empty; bound_percent > 0.
ValidationVerdict judge(double error_percent, std::span<const double> measured_s, std::span<const double> predicted_s,
                        double bound_percent);

}  // namespace megasim::scenarios
