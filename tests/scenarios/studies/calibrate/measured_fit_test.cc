// The bounded least-squares solver and the identifiability test
// (scenarios/studies/calibrate/measured_fit.h) on formulas whose answers are known on paper.
#include "scenarios/studies/calibrate/measured_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace megasim::scenarios {
namespace {

// A roofline-like model of "rows": time_i = a_i / x0 + b_i / x1, data made with x = (0.6, 0.8).
struct Roofline {
  std::vector<double> a{1.0, 2.0, 0.5, 1.5};
  std::vector<double> b{0.2, 0.1, 0.9, 0.4};
  std::vector<double> measured;

  explicit Roofline(double x0, double x1) {
    for (std::size_t i = 0; i < a.size(); ++i) measured.push_back(a[i] / x0 + b[i] / x1);
  }
  [[nodiscard]] BoundedProblem problem(double x1_upper = 1.0) const {
    return {{0.05, 0.05}, {1.0, x1_upper}, [this](const std::vector<double>& x) {
              std::vector<double> r;
              for (std::size_t i = 0; i < a.size(); ++i)
                r.push_back(std::log((a[i] / x[0] + b[i] / x[1]) / measured[i]));
              return r;
            }};
  }
};

TEST(MeasuredFit, RecoversTheParametersOfExactData) {
  const Roofline data(0.6, 0.8);
  const FitOutcome fit = fit_bounded(data.problem(), {0.9, 0.3}, FitSettings{});
  EXPECT_TRUE(fit.converged);
  EXPECT_NEAR(fit.x[0], 0.6, 1e-6);
  EXPECT_NEAR(fit.x[1], 0.8, 1e-6);
  for (const double r : fit.residuals) EXPECT_NEAR(r, 0.0, 1e-8);
}

TEST(MeasuredFit, SameInputsGiveTheSameFit) {
  const Roofline data(0.6, 0.8);
  const FitOutcome a = fit_bounded(data.problem(), {0.9, 0.3}, FitSettings{});
  const FitOutcome b = fit_bounded(data.problem(), {0.9, 0.3}, FitSettings{});
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

TEST(MeasuredFit, AnOptimumBeyondABoundEndsOnIt) {
  // The data want x1 = 0.8, the bound stops it at 0.5; x0 then rises above 0.6 to make up for the
  // slower second term.
  const Roofline data(0.6, 0.8);
  const FitOutcome fit = fit_bounded(data.problem(0.5), {0.3, 0.3}, FitSettings{});
  EXPECT_DOUBLE_EQ(fit.x[1], 0.5);
  EXPECT_GT(fit.x[0], 0.6);
  EXPECT_LT(fit.x[0], 1.0);
}

TEST(MeasuredFit, TheJacobianIsTheDerivative) {
  const Roofline data(0.6, 0.8);
  const BoundedProblem p = data.problem();
  const std::vector<double> x{0.5, 0.5};
  int evaluations = 0;
  const Jacobian j = difference_jacobian(p, x, p.residuals(x), FitSettings{.difference_step = 1e-6}, &evaluations);
  EXPECT_EQ(evaluations, 2);
  for (std::size_t i = 0; i < data.a.size(); ++i) {
    const double t = data.a[i] / x[0] + data.b[i] / x[1];
    EXPECT_NEAR(j[i][0], -data.a[i] / (x[0] * x[0]) / t, 1e-4);
    EXPECT_NEAR(j[i][1], -data.b[i] / (x[1] * x[1]) / t, 1e-4);
  }
}

TEST(MeasuredFit, AColumnOfZerosIsInsensitive) {
  const Jacobian s{{1.0, 0.0, 0.3}, {0.5, 0.0, 0.9}, {0.2, 0.0, 0.1}};
  const Identifiability id = identifiability(s, IdentifiabilitySettings{});
  EXPECT_EQ(id.weakness, (std::vector<Weakness>{Weakness::kNone, Weakness::kInsensitive, Weakness::kNone}));
  EXPECT_EQ(id.singular_values.size(), 2U);
}

TEST(MeasuredFit, ProportionalColumnsAreCollinearAndTheLaterIsDropped) {
  const Jacobian s{{1.0, 2.0, 0.3}, {0.5, 1.0, 0.9}, {0.2, 0.4, 0.1}};
  const Identifiability id = identifiability(s, IdentifiabilitySettings{});
  EXPECT_EQ(id.weakness, (std::vector<Weakness>{Weakness::kNone, Weakness::kCollinear, Weakness::kNone}));
}

TEST(MeasuredFit, IndependentColumnsAreIdentifiable) {
  const Jacobian s{{1.0, 0.0}, {0.0, 1.0}, {0.5, 0.5}};
  const Identifiability id = identifiability(s, IdentifiabilitySettings{});
  EXPECT_EQ(id.weakness, (std::vector<Weakness>{Weakness::kNone, Weakness::kNone}));
}

TEST(MeasuredFit, SensitivitiesArePerRelativeChange) {
  const Jacobian j{{2.0, 1.0}};
  // x0 = 0.5: d r / d log x0 = 2 * 0.5; x1 = 0 is floored at 1% of its range of 100.
  const Jacobian s = relative_sensitivities(j, {0.5, 0.0}, {0.0, 0.0}, {1.0, 100.0});
  EXPECT_DOUBLE_EQ(s[0][0], 1.0);
  EXPECT_DOUBLE_EQ(s[0][1], 1.0);
}

}  // namespace
}  // namespace megasim::scenarios
