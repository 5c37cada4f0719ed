// The verdict of `megasim validate` (scenarios/studies/validate_verdict.h): relative interquartile
// ranges worked out by hand (numpy's linear interpolation), their quadrature sum, and each branch
// of the verdict at and around its thresholds; then the report's text and JSON.
#include "scenarios/studies/validate_verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "scenarios/studies/validate_study.h"

namespace megasim::scenarios {
namespace {

// Five values 1..5: P25 = 2, P50 = 3, P75 = 4, so (4 - 2) / 3.
TEST(ValidateVerdict, SpreadIsTheInterquartileRangeOverTheMedian) {
  const std::vector<double> five = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(relative_spread_percent(five), 2.0 / 3.0 * 100);
  // Four values 1, 2, 3, 10: ranks 0.75, 1.5, 2.25 give P25 1.75, P50 2.5, P75 4.75: 3 / 2.5.
  const std::vector<double> four = {10, 1, 3, 2};
  EXPECT_DOUBLE_EQ(relative_spread_percent(four), 3.0 / 2.5 * 100);
  // One outlier among seven equal values leaves the quartiles, so the spread, at 0.
  const std::vector<double> outlier = {1, 1, 1, 9, 1, 1, 1};
  EXPECT_EQ(relative_spread_percent(outlier), 0);
  const std::vector<double> one = {0.4};
  EXPECT_EQ(relative_spread_percent(one), 0);
  EXPECT_EQ(relative_spread_percent({}), 0);
}

// The 95% half-width of a median over its IQR and sqrt(n), from its parts: the normal 97.5%
// quantile, the median's standard error sqrt(pi / 2) sigma / sqrt(n), and sigma = IQR / 1.349.
const double kHalfWidthPerIqr = 1.959964 * std::sqrt(std::numbers::pi / 2) / 1.348980;

TEST(ValidateVerdict, TheHalfWidthOfAMedianShrinksWithTheSquareRootOfItsCount) {
  const std::vector<double> three = {0.94, 1.0, 1.06};  // IQR 6%
  EXPECT_NEAR(median_half_width_percent(three), kHalfWidthPerIqr * 6 / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(kHalfWidthPerIqr, 1.821, 1e-3);
  // Nine values with the same quartiles: 0.97 and 1.03 at ranks 2 and 6 of 0..8.
  const std::vector<double> nine = {0.9, 0.95, 0.97, 0.99, 1.0, 1.01, 1.03, 1.05, 1.1};
  EXPECT_NEAR(relative_spread_percent(nine), 6, 1e-9);
  EXPECT_NEAR(median_half_width_percent(nine), kHalfWidthPerIqr * 6 / 3, 1e-9);
  const std::vector<double> one = {1.0};
  EXPECT_EQ(median_half_width_percent(one), 0);
}

TEST(ValidateVerdict, TheTwoSidesHalfWidthsAddInQuadrature) {
  // Measured IQR 6% ((1.03 - 0.97) / 1), predicted 8%, three of each.
  const std::vector<double> measured = {0.94, 1.0, 1.06};
  const std::vector<double> predicted = {0.92, 1.0, 1.08};
  const ValidationVerdict v = judge(0, measured, predicted, 15);
  EXPECT_NEAR(v.measured_spread_percent, 6, 1e-9);
  EXPECT_NEAR(v.predicted_spread_percent, 8, 1e-9);
  EXPECT_NEAR(v.uncertainty_percent, kHalfWidthPerIqr * 10 / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(v.bound_percent, 15);
  EXPECT_EQ(v.measured_count, 3);
  // A calibration file has no rounds: only the measured side.
  EXPECT_NEAR(judge(0, measured, {}, 15).uncertainty_percent, kHalfWidthPerIqr * 6 / std::sqrt(3.0), 1e-9);
}

// IQR 3% over three iterations: uncertainty 3.2%, below a 10% bound.
const std::vector<double> kSteady = {1.03, 0.97, 1.0};

TEST(ValidateVerdict, AQuietMachineHoldsTheErrorAgainstTheBound) {
  const double u = kHalfWidthPerIqr * 3 / std::sqrt(3.0);
  EXPECT_NEAR(judge(0, kSteady, {}, 10).uncertainty_percent, u, 1e-9);
  EXPECT_LT(u, 10);
  EXPECT_EQ(judge(-9.9, kSteady, {}, 10).verdict, Verdict::kWithin);
  EXPECT_EQ(judge(10, kSteady, {}, 10).verdict, Verdict::kWithin);  // the bound itself is within
  EXPECT_EQ(judge(10 + u + 0.1, kSteady, {}, 10).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-(10 + u + 0.1), kSteady, {}, 10).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-15, kSteady, {}, 10).error_percent, -15);
}

// Past the bound by less than the noise: 10.1% +- 3.2% against 10% may be 9%; only an error beyond
// B + U is outside whatever the noise, as on a noisy machine.
TEST(ValidateVerdict, AnErrorPastTheBoundByLessThanItsUncertaintyIsInconclusive) {
  const double u = kHalfWidthPerIqr * 3 / std::sqrt(3.0);
  EXPECT_EQ(judge(10.1, kSteady, {}, 10).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(-(10 + u - 0.1), kSteady, {}, 10).verdict, Verdict::kInconclusive);
  ValidationReport r;
  r.scenario = "s";
  r.backend = "cpu";
  r.measured_iterations = kSteady;
  r.iteration = {"iteration", 1.12, 1.0, 12};
  r.verdict = judge(r, 10);
  EXPECT_NE(to_text(r).find("verdict: inconclusive: the error of +12.0% passes the 10% bound by less than its "
                            "uncertainty of +-3.2% (95%; the IQR of 3 measured iterations 3.0%)"),
            std::string::npos)
      << to_text(r);
}

// IQR 20% over three iterations (0.8, 1.0, 1.2: quartiles 0.9 and 1.1): uncertainty U = 1.821 x
// 20 / sqrt(3) = 21.0% against a 15% bound. No error below 15 + U says anything; beyond it the model
// is off whatever the noise.
TEST(ValidateVerdict, ANoisyMachineIsInconclusiveUnlessTheErrorExceedsBoundPlusUncertainty) {
  const std::vector<double> noisy = {1.2, 0.8, 1.0};
  const double u = kHalfWidthPerIqr * 20 / std::sqrt(3.0);
  EXPECT_NEAR(judge(0, noisy, {}, 15).uncertainty_percent, u, 1e-9);
  EXPECT_EQ(judge(0, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(-2, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(15 + u - 0.1, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(15 + u + 0.1, noisy, {}, 15).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-60, noisy, {}, 15).verdict, Verdict::kOutside);
  // The same noise is within a 25% bound.
  EXPECT_EQ(judge(-2, noisy, {}, 25).verdict, Verdict::kWithin);
}

TEST(ValidateVerdict, FewerThanThreeIterationsAreInconclusive) {
  const std::vector<double> one = {1.0};
  const std::vector<double> two = {1.0, 1.0};
  EXPECT_EQ(judge(0, one, {}, 10).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(0, two, {}, 10).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(0, kSteady, {}, 10).verdict, Verdict::kWithin);
}

TEST(ValidateVerdict, VerdictNames) {
  EXPECT_EQ(to_string(Verdict::kWithin), "within");
  EXPECT_EQ(to_string(Verdict::kOutside), "outside");
  EXPECT_EQ(to_string(Verdict::kInconclusive), "inconclusive");
}

// A report with interleaved calibration: its rounds' predictions, the verdict and the spread
// appear in both forms.
ValidationReport noisy_report() {
  ValidationReport r;
  r.scenario = "s";
  r.backend = "cpu";
  r.measured_iterations = {1.2, 0.8, 1.0};
  r.iteration = {"iteration", 0.98, 1.0, -2};
  r.calibration = "interleaved";
  r.predicted_iterations = {0.98, 0.97, 0.99};  // the median, 0.98, is the iteration row's prediction
  r.median_prediction = 0;
  r.verdict = judge(r, 15);
  return r;
}

TEST(ValidateVerdict, TheReportUsesItsIterationsAndRounds) {
  const ValidationReport r = noisy_report();
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->verdict, Verdict::kInconclusive);
  EXPECT_NEAR(r.verdict->measured_spread_percent, 20, 1e-9);
  const double predicted_iqr = (0.985 - 0.975) / 0.98 * 100;
  EXPECT_NEAR(r.verdict->predicted_spread_percent, predicted_iqr, 1e-9);
  EXPECT_NEAR(r.verdict->uncertainty_percent, kHalfWidthPerIqr * std::hypot(20, predicted_iqr) / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(r.verdict->error_percent, -2);
}

// Uncertainty 1.821 x hypot(20, 1.02) / sqrt(3) = 21.1%.
TEST(ValidateVerdict, TextSaysInconclusiveWithTheUncertaintyInsteadOfAPreciseVerdict) {
  const std::string text = to_text(noisy_report());
  EXPECT_NE(text.find("verdict: inconclusive: the machine's timing spread leaves the error of -2.0% uncertain by "
                      "+-21.1% (95%), more than the 15% bound (the IQR of 3 measured iterations 20.0%, of 3 "
                      "rounds' predictions 1.0%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("calibration: measured in 3 rounds"), std::string::npos) << text;
  EXPECT_NE(text.find("0.9800, 0.9700, 0.9900"), std::string::npos) << text;
  ValidationReport quiet = noisy_report();
  quiet.measured_iterations = {1.0, 1.01, 0.99};
  quiet.verdict = judge(quiet, 15);
  EXPECT_NE(to_text(quiet).find("verdict: within the 15% bound: error -2.0% +- 1.5% (95%;"), std::string::npos)
      << to_text(quiet);
  ValidationReport one = noisy_report();
  one.measured_iterations = {1.0};
  one.verdict = judge(one, 15);
  EXPECT_NE(to_text(one).find("verdict: inconclusive: 1 measured iteration gives no timing spread"), std::string::npos)
      << to_text(one);
}

TEST(ValidateVerdict, JsonCarriesTheVerdictAndBothSpreads) {
  const std::string json = to_json(noisy_report());
  for (const char* key :
       {R"("verdict": "inconclusive")", R"("bound_percent": 15)", R"("uncertainty_percent": )",
        R"("measured_spread_percent": )", R"("predicted_spread_percent": )", R"("calibration": "interleaved")",
        R"("predicted_iterations_s": [)", R"("median_prediction": 0)"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  ValidationReport none = noisy_report();
  none.verdict.reset();
  EXPECT_EQ(to_json(none).find("\"verdict\""), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
