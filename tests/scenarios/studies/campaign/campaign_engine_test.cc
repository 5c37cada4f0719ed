// The campaign engine against closed forms: renewal-theory ETTR under exponential failures with
// instant detection and fixed costs, the optimum interval (Daly), flaps against the NCCL timeout,
// the spare pool, uploads, and the bookkeeping that puts every second in one bucket.
#include <gtest/gtest.h>

#include <cmath>

#include "models/checkpoint_theory.h"
#include "tests/scenarios/campaign_test_util.h"

namespace megasim::scenarios {
namespace {

using testing::closed_form_oracle;
using testing::ettr_over_seeds;
using testing::fixed_cost_config;
using testing::job_failure;
using testing::kDay;
using testing::lost;

// models/checkpoint_theory.h: ETTR = lambda tau e^{-lambda R} / (e^{lambda (tau + delta)} - 1). The
// simulated mean over K seeds of horizon D agrees within 4 standard errors plus the end effect of a
// finite horizon (the segment in progress at the end counts as kept: at most tau + delta + R of D).
TEST(CampaignEngine, EttrMatchesTheClosedFormUnderExponentialFailures) {
  const double mtbf = 2 * 3600.0, tau = 1200, delta = 60, diagnosis = 200, restart = 300, load = 100;
  CampaignConfig c = fixed_cost_config(30 * kDay);
  c.processes = {job_failure(1 / mtbf)};
  c.checkpoint.interval_s = tau;
  c.checkpoint.save_blocking_s = delta;
  c.checkpoint.load_s = load;
  c.recovery.diagnosis_s = diagnosis;
  c.recovery.restart_s = restart;
  const int seeds = 200;
  const testing::SeedStats s = ettr_over_seeds(c, closed_form_oracle(), seeds);
  const double expected = models::expected_ettr_exponential(tau, delta, diagnosis + restart + load, mtbf);
  const double tolerance = 4 * s.sd / std::sqrt(seeds) + (tau + delta + diagnosis + restart + load) / c.horizon_s;
  EXPECT_NEAR(s.mean, expected, tolerance) << "sd " << s.sd;
  EXPECT_LT(tolerance, 0.005);  // the check is sharp
}

// Detection by the collective watchdog (a fixed delay) and communicator initialisation (per GPU x
// GPUs) are part of R as well.
TEST(CampaignEngine, WatchdogDetectionAndCommInitCountAsRestartCost) {
  const double mtbf = 3 * 3600.0, tau = 900, delta = 20, watchdog = 600, per_gpu = 0.01;
  CampaignConfig c = fixed_cost_config(30 * kDay);
  c.processes = {job_failure(1 / mtbf)};
  c.checkpoint.interval_s = tau;
  c.checkpoint.save_blocking_s = delta;
  c.recovery.detection = models::Detection::kNcclWatchdog;
  c.recovery.nccl_watchdog_s = watchdog;
  c.recovery.comm_init_s_per_gpu = per_gpu;
  c.job_gpus = 10'000;  // 100 s of communicator initialisation
  const int seeds = 200;
  const testing::SeedStats s = ettr_over_seeds(c, closed_form_oracle(), seeds);
  const double r = watchdog + per_gpu * 10'000;
  const double expected = models::expected_ettr_exponential(tau, delta, r, mtbf);
  EXPECT_NEAR(s.mean, expected, 4 * s.sd / std::sqrt(seeds) + (tau + delta + r) / c.horizon_s);
}

// With the save cost small against the MTBF (delta / M = 0.002), the interval with the best simulated
// ETTR over a grid is the grid point nearest the exact optimum, which Daly's formula gives within 1%.
// The intervals share seeds, so they see the same failures (common random numbers).
TEST(CampaignEngine, BestSimulatedIntervalSitsAtDalysOptimum) {
  const double mtbf = 4 * 3600.0, delta = 30, restart = 300;
  const double daly = models::daly_interval_s(delta, mtbf);
  const double optimum = models::optimal_interval_exponential_s(delta, mtbf);
  EXPECT_NEAR(daly, optimum, 0.01 * optimum);
  CampaignConfig c = fixed_cost_config(60 * kDay);
  c.processes = {job_failure(1 / mtbf)};
  c.checkpoint.save_blocking_s = delta;
  c.recovery.restart_s = restart;
  const std::vector<double> grid{300, 450, 600, 750, 900, 1050, 1200, 1500, 1800};
  double best = 0, best_ettr = 0;
  for (const double tau : grid) {
    c.checkpoint.interval_s = tau;
    const double e = ettr_over_seeds(c, closed_form_oracle(), 100).mean;
    EXPECT_NEAR(e, models::expected_ettr_exponential(tau, delta, restart, mtbf), 0.002) << tau;
    if (e > best_ettr) best_ettr = e, best = tau;
  }
  double nearest = grid[0];
  for (const double tau : grid) {
    if (std::abs(tau - optimum) < std::abs(nearest - optimum)) nearest = tau;
  }
  EXPECT_EQ(best, nearest) << "Daly " << daly << " s, exact optimum " << optimum << " s";
}

}  // namespace
}  // namespace megasim::scenarios
