// Whether `megasim validate`'s error can be trusted on a machine whose timings vary (a shared host):
// the error of the prediction is held against a bound only when the timing noise is smaller than
// the bound; otherwise the validation says that the machine could not tell.
//
// The spread of one side is its relative interquartile range, (P75 - P25) / P50 in percent
// (sim::percentile's interpolation): of the measured iterations, and of the predictions, one per
// calibration round when the calibration was measured in rounds interleaved with the iterations
// (cpu_calibration_rounds.h; none with a calibration file: 0). The two sides' noise is independent,
// so the spread of the error is their quadrature sum. The verdict on an error e against a bound B
// with spread S:
//  - S <= B: within when |e| <= B, else outside;
//  - S > B:  outside when |e| > B + S (off by more than the bound even allowing for the noise),
//            else inconclusive (the noise is as large as the bound; the error says nothing).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace megasim::scenarios {

enum class Verdict : std::uint8_t { kWithin, kOutside, kInconclusive };
std::string_view to_string(Verdict verdict);  // "within", "outside", "inconclusive"

struct ValidationVerdict {
  double bound_percent = 0;
  double error_percent = 0;
  double measured_spread_percent = 0;
  double predicted_spread_percent = 0;  // 0 with a single calibration
  double spread_percent = 0;
  Verdict verdict = Verdict::kInconclusive;
};

// Relative interquartile range in percent; 0 for fewer than two values. Precondition: the median
// of `seconds` is positive (asserted).
double relative_spread_percent(std::span<const double> seconds);

// Preconditions (asserted): `measured_s` is not empty; bound_percent > 0.
ValidationVerdict judge(double error_percent, std::span<const double> measured_s, std::span<const double> predicted_s,
                        double bound_percent);

}  // namespace megasim::scenarios
