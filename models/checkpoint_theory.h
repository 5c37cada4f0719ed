// Closed forms for checkpoint/restart under exponential failures: Young's and Daly's optimal
// intervals and the expected effective training time ratio (ETTR), the references a campaign
// simulation is tested against.
//
// Model (Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps"):
// work is done in segments of tau seconds of training followed by a blocking save of delta seconds;
// failures arrive as a Poisson process of rate lambda = 1/M at every moment (training, saving and
// recovering alike). A failure loses the segment in progress (back to the last checkpoint) and is
// followed by a recovery of R seconds (detection, diagnosis, replacement, restart, load) which a
// further failure restarts from the beginning.
//
// Derivation of the ETTR. Recovery completes once R seconds pass without a failure; the expected time
// until then is E_R = (e^{lambda R} - 1) / lambda. A segment of s = tau + delta seconds, started
// fresh, takes A = E[min(X, s)] + P(X < s) (E_R + A) with X ~ Exp(lambda), E[min(X, s)] =
// (1 - e^{-lambda s}) / lambda and P(X < s) = 1 - e^{-lambda s}; solving for A:
//   A = (e^{lambda s} - 1) (1/lambda + E_R) = (e^{lambda (tau + delta)} - 1) e^{lambda R} / lambda.
// By the renewal-reward theorem the long-run fraction of time spent on kept work is
//   ETTR = tau / A = lambda tau e^{-lambda R} / (e^{lambda (tau + delta)} - 1).
#pragma once

namespace megasim::models {

// Young (1974): sqrt(2 delta M). Preconditions: delta >= 0, M > 0.
double young_interval_s(double delta_s, double mtbf_s);

// Daly (2006), eq. 37: sqrt(2 delta M) [1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta for
// delta < 2M, else M.
double daly_interval_s(double delta_s, double mtbf_s);

// The formula above. Preconditions: tau > 0, delta >= 0, R >= 0, M > 0.
double expected_ettr_exponential(double tau_s, double delta_s, double restart_s, double mtbf_s);

// The tau that maximises expected_ettr_exponential: the root of e^{lambda (tau + delta)} (1 - lambda
// tau) = 1 (d/dtau of tau / (e^{lambda (tau + delta)} - 1) = 0), found by bisection; it does not
// depend on R. Daly's interval approximates it.
double optimal_interval_exponential_s(double delta_s, double mtbf_s);

}  // namespace megasim::models
