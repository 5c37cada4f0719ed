// The solver of `megasim calibrate --measured`: bounded nonlinear least squares by
// Levenberg-Marquardt (Marquardt's diagonal scaling) with a forward-difference Jacobian, and the
// identifiability of the parameters from that Jacobian. Generic: the study (measured_calibration_
// study.h) supplies residuals that run the simulator; the tests supply formulas.
//
// Bounds: the parameters are fitted in unit coordinates u = (x - lower) / (upper - lower), a step is
// clamped to [0, 1], and a parameter on a bound whose gradient points outwards is left out of the
// step (the projected, active-set form of LM). A parameter may so end exactly on a bound.
// Deterministic: no randomness, a fixed order of every operation.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace megasim::scenarios {

using Residuals = std::function<std::vector<double>(const std::vector<double>& x)>;
// Rows × parameters, d residual_i / d x_j in the parameters' own units.
using Jacobian = std::vector<std::vector<double>>;

struct BoundedProblem {
  std::vector<double> lower;  // per parameter, lower < upper
  std::vector<double> upper;
  Residuals residuals;  // the same number of residuals at every x
};

struct FitSettings {
  int max_iterations = 25;        // Jacobians; each costs one residual evaluation per parameter
  double difference_step = 1e-3;  // of a parameter's range, for the Jacobian
  // Stop once an accepted step lowers the cost (half the sum of squares) by less than this fraction.
  double relative_tolerance = 1e-12;
};

struct FitOutcome {
  std::vector<double> x;
  std::vector<double> residuals;  // at x
  Jacobian jacobian;              // at x
  int iterations = 0;
  int evaluations = 0;  // residual evaluations, the Jacobians' included
  bool converged = false;
};

// Minimises half the sum of squared residuals from `start` (clamped into the bounds).
FitOutcome fit_bounded(const BoundedProblem& problem, const std::vector<double>& start, const FitSettings& settings);

// The forward-difference Jacobian at x (backwards for a parameter within a step of its upper bound),
// `at_x` the residuals there. Adds the evaluations to *evaluations.
Jacobian difference_jacobian(const BoundedProblem& problem, const std::vector<double>& x,
                             const std::vector<double>& at_x, const FitSettings& settings, int* evaluations);

// Why a parameter cannot be fitted from the rows.
enum class Weakness : std::uint8_t {
  kNone,
  kInsensitive,  // no row's residual moves with it
  kCollinear,    // a combination of the other parameters moves every residual as it does
};

// Each parameter's column of sensitivities: d residual / d log x (the change of a log-ratio residual
// per relative change of the parameter), with |x| floored at 1% of the range so that a parameter at
// 0 (a launch overhead) still has a scale.
Jacobian relative_sensitivities(const Jacobian& jacobian, const std::vector<double>& x,
                                const std::vector<double>& lower, const std::vector<double>& upper);

struct IdentifiabilitySettings {
  // Insensitive: no row's residual moves by more than this per unit of log x (0.001: doubling the
  // parameter changes no prediction by 0.07%).
  double min_sensitivity = 1e-3;
  // Collinear: the smallest singular value of the sensitivities with columns scaled to unit length
  // is below this (some combination of parameter changes moves the residuals by under 1% of what
  // each parameter alone does). The parameter loading most on that singular vector is dropped, ties
  // to the later one (callers list parameters by priority), and the test repeats on the rest.
  double min_singular_value = 1e-2;
};

struct Identifiability {
  std::vector<Weakness> weakness;       // per parameter
  std::vector<double> singular_values;  // of the unit-column sensitivities of the parameters kept
};

Identifiability identifiability(const Jacobian& sensitivities, const IdentifiabilitySettings& settings);

}  // namespace megasim::scenarios
