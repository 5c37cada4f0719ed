// The verdict of `megasim validate` (scenarios/validate_verdict.h): relative interquartile ranges
// worked out by hand (numpy's linear interpolation), their quadrature sum, and each branch of the
// verdict at and around its thresholds; then the report's text and JSON.
#include "scenarios/validate_verdict.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/validate_study.h"

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

// Quartiles of {0.97, 1, 1.03} are 0.985 and 1.015: spread 3%.
const std::vector<double> kSteady = {1.03, 0.97, 1.0};

TEST(ValidateVerdict, TheTwoSidesSpreadsAddInQuadrature) {
  // Measured spread 6% ((1.03 - 0.97) / 1), predicted 8%: 10%.
  const std::vector<double> measured = {0.94, 1.0, 1.06};
  const std::vector<double> predicted = {0.92, 1.0, 1.08};
  const ValidationVerdict v = judge(0, measured, predicted, 15);
  EXPECT_NEAR(v.measured_spread_percent, 6, 1e-9);
  EXPECT_NEAR(v.predicted_spread_percent, 8, 1e-9);
  EXPECT_NEAR(v.spread_percent, 10, 1e-9);
  EXPECT_EQ(v.bound_percent, 15);
  // A single calibration has no predicted spread.
  EXPECT_NEAR(judge(0, measured, {}, 15).spread_percent, 6, 1e-9);
}

TEST(ValidateVerdict, AQuietMachineHoldsTheErrorAgainstTheBound) {
  EXPECT_NEAR(judge(0, kSteady, {}, 10).spread_percent, 3, 1e-9);
  EXPECT_EQ(judge(-9.9, kSteady, {}, 10).verdict, Verdict::kWithin);
  EXPECT_EQ(judge(10, kSteady, {}, 10).verdict, Verdict::kWithin);  // the bound itself is within
  EXPECT_EQ(judge(10.1, kSteady, {}, 10).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-12, kSteady, {}, 10).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-12, kSteady, {}, 10).error_percent, -12);
}

// Spread 20% (measured {0.8, 1.0, 1.2}: quartiles 0.9 and 1.1) against a 15% bound: no error below 15 + 20 = 35% says
// anything; beyond it the model is off whatever the noise.
TEST(ValidateVerdict, ANoisyMachineIsInconclusiveUnlessTheErrorExceedsBoundPlusSpread) {
  const std::vector<double> noisy = {1.2, 0.8, 1.0};
  EXPECT_NEAR(judge(0, noisy, {}, 15).spread_percent, 20, 1e-9);
  EXPECT_EQ(judge(0, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(-2, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(34.9, noisy, {}, 15).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge(35.1, noisy, {}, 15).verdict, Verdict::kOutside);
  EXPECT_EQ(judge(-60, noisy, {}, 15).verdict, Verdict::kOutside);
  // The same spread is within a 25% bound.
  EXPECT_EQ(judge(-2, noisy, {}, 25).verdict, Verdict::kWithin);
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
  r.predicted_iterations = {0.98, 0.97, 0.99};
  r.verdict = judge(r, 15);
  return r;
}

TEST(ValidateVerdict, TheReportUsesItsIterationsAndRounds) {
  const ValidationReport r = noisy_report();
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->verdict, Verdict::kInconclusive);
  EXPECT_NEAR(r.verdict->measured_spread_percent, 20, 1e-9);
  EXPECT_NEAR(r.verdict->predicted_spread_percent, (0.985 - 0.975) / 0.98 * 100, 1e-9);
  EXPECT_EQ(r.verdict->error_percent, -2);
}

TEST(ValidateVerdict, TextSaysInconclusiveWithTheSpreadInsteadOfAPreciseVerdict) {
  const std::string text = to_text(noisy_report());
  EXPECT_NE(text.find("verdict: inconclusive: the machine's timing spread is 20.0% > the 15% bound"), std::string::npos)
      << text;
  EXPECT_NE(text.find("calibration: measured in 3 rounds"), std::string::npos) << text;
  EXPECT_NE(text.find("0.9800, 0.9700, 0.9900"), std::string::npos) << text;
  ValidationReport quiet = noisy_report();
  quiet.measured_iterations = {1.0, 1.01, 0.99};
  quiet.verdict = judge(quiet, 15);
  EXPECT_NE(to_text(quiet).find("verdict: within the 15% bound (error -2.0%"), std::string::npos) << to_text(quiet);
}

TEST(ValidateVerdict, JsonCarriesTheVerdictAndBothSpreads) {
  const std::string json = to_json(noisy_report());
  for (const char* key : {R"("verdict": "inconclusive")", R"("bound_percent": 15)", R"("spread_percent": )",
                          R"("measured_spread_percent": )", R"("predicted_spread_percent": )",
                          R"("calibration": "interleaved")", R"("predicted_iterations_s": [)"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  ValidationReport none = noisy_report();
  none.verdict.reset();
  EXPECT_EQ(to_json(none).find("\"verdict\""), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
