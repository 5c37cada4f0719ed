// Drift over a run ([stragglers] drift_*): the draw of drift rates, one iteration at an uptime, the
// campaign engine's steps and restarts, and the campaign study's knots.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <string>

#include "backend/sim/straggler_draw.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/campaign/campaign_oracle.h"
#include "scenarios/studies/campaign/campaign_report.h"
#include "scenarios/studies/campaign/campaign_study.h"
#include "scenarios/studies/run_study.h"
#include "tests/scenarios/campaign_test_util.h"
#include "tests/scenarios/config_error_util.h"
#include "tests/scenarios/straggler_test_util.h"

namespace megasim::scenarios {
namespace {

using testing::closed_form_oracle;
using testing::fixed_cost_config;
using testing::job_failure;
using testing::lost;
using testing::thrown_key;

using testing::dp_scenario;

double whatif_s(const StragglerReport& r, const std::string& name) {
  return testing::whatif(r, name).iteration_time_s;
}

// Rates: each server drifts with probability drift_host_fraction, at a log-normal rate of the given
// mean and coefficient of variation. Over 20,000 servers the count is within 4 binomial standard
// deviations and the mean rate within 4 standard errors.
TEST(Drift, RatesFollowTheirParameters) {
  models::StragglerParams p;
  p.drift_per_hour = 0.002;
  p.drift_host_fraction = 0.3;
  p.drift_cv = 0.5;
  const std::int64_t servers = 20000;
  const std::vector<double> rates = backend::drift_rates_per_hour(p, servers, sim::RngStreams(11));
  std::int64_t drifting = 0;
  double sum = 0;
  for (const double r : rates) {
    if (r > 0) ++drifting;
    sum += r;
  }
  const double n = static_cast<double>(servers);
  EXPECT_NEAR(static_cast<double>(drifting), 0.3 * n, 4 * std::sqrt(n * 0.3 * 0.7));
  const double mean = sum / static_cast<double>(drifting);
  EXPECT_NEAR(mean, 0.002, 4 * 0.002 * 0.5 / std::sqrt(static_cast<double>(drifting)));
  // Without spread every drifting server has exactly the mean rate; the same seed, the same servers.
  p.drift_cv = 0;
  const std::vector<double> fixed = backend::drift_rates_per_hour(p, servers, sim::RngStreams(11));
  for (std::size_t s = 0; s < fixed.size(); ++s) {
    EXPECT_EQ(fixed[s] > 0, rates[s] > 0);
    if (fixed[s] > 0) {
      EXPECT_EQ(fixed[s], 0.002);
    }
  }
}

// At uptime u every server of rate r computes (1 + r·u) times slower: the same iteration as that
// many slow hosts of that factor; a restart (the what-if) recovers the nominal iteration exactly,
// and at uptime 0 drift changes nothing.
TEST(Drift, AnUptimeSlowsEveryDriftingServerByItsFactor) {
  Scenario s = dp_scenario();
  const RunResult nominal = run_iteration_study(s);
  apply_override(s, "stragglers.drift_per_hour=0.01");
  const RunResult fresh = run_iteration_study(s);
  EXPECT_FALSE(fresh.report.stragglers.has_value());
  EXPECT_EQ(fresh.trace.iteration_time, nominal.trace.iteration_time);

  apply_override(s, "stragglers.uptime_h=10");
  const RunResult drifted = run_iteration_study(s);
  Scenario slow = dp_scenario();
  apply_override(slow, "stragglers.slow_hosts=0:1.1,1:1.1,2:1.1,3:1.1");
  const RunResult slowed = run_iteration_study(slow);
  const double rounding = 1e-9 * static_cast<double>(drifted.workload.stages[0].tasks.size());
  EXPECT_NEAR(drifted.report.iteration_time_s, slowed.report.iteration_time_s, rounding);
  EXPECT_GT(drifted.report.iteration_time_s, nominal.report.iteration_time_s * 1.05);
  ASSERT_TRUE(drifted.report.stragglers.has_value());
  EXPECT_EQ(drifted.report.stragglers->slow_hosts, 4);
  EXPECT_DOUBLE_EQ(whatif_s(*drifted.report.stragglers, "restart"), nominal.report.iteration_time_s);
}

// No failures, iterations of 1 s drifting by 10% per hour: each 600 s step trains at the factor of
// its middle, so the progress over 10 h is the sum over steps of 600 / (1 + 0.1·(k + 0.5)/6), and
// the rest of the time is drift.
TEST(Drift, TrainingFollowsTheDriftInSteps) {
  CampaignConfig c = fixed_cost_config(10 * 3600.0);
  c.checkpoint.interval_s = 1e9;
  c.drift_step_s = 600;
  CampaignOracle o = closed_form_oracle();
  const double per_s = 0.1 / 3600;
  o.drift_factor = [=](double uptime_s) { return 1 + per_s * uptime_s; };
  const SeedOutcome out = run_campaign_seed(c, o, 1, false);
  double expected = 0;
  for (int k = 0; k < 60; ++k) expected += 600 / (1 + per_s * (k + 0.5) * 600);
  EXPECT_NEAR(out.iterations, expected, 1e-9 * expected);
  EXPECT_NEAR(lost(out, LostCause::kDrift), c.horizon_s - expected, 1e-6);
  EXPECT_EQ(lost(out, LostCause::kDegraded), 0);
  EXPECT_NEAR(out.ettr, expected / c.horizon_s, 1e-12);
}

// A restart resets the uptime: with failures (free to recover from, each losing the work since the
// last checkpoint) the drift costs less than without, and every second is still in one bucket.
TEST(Drift, RestartsResetTheDrift) {
  CampaignConfig c = fixed_cost_config(5 * 86400.0);
  c.checkpoint.interval_s = 300;
  c.drift_step_s = 600;
  CampaignOracle o = closed_form_oracle();
  o.drift_factor = [](double uptime_s) { return 1 + uptime_s / 86400; };  // +100% per day
  const SeedOutcome steady = run_campaign_seed(c, o, 2, false);
  c.processes = {job_failure(1 / 7200.0)};
  const SeedOutcome restarted = run_campaign_seed(c, o, 2, true);
  ASSERT_GT(restarted.job_failures, 20);
  EXPECT_LT(lost(restarted, LostCause::kDrift), 0.25 * lost(steady, LostCause::kDrift));
  const double accounted =
      restarted.productive_s + std::accumulate(restarted.lost_s.begin(), restarted.lost_s.end(), 0.0);
  EXPECT_NEAR(accounted, c.horizon_s, 1e-6 * c.horizon_s);
  // Over the whole run the factor reaches at most 1 + (time between restarts)/day: iterations are
  // never slower than after the longest uptime.
  double longest_uptime = 0;
  double started = 0;
  for (const TimelineEvent& e : restarted.timeline) {
    if (e.kind != "restarted") continue;
    longest_uptime = std::max(longest_uptime, e.time_s - started);
    started = e.time_s;
  }
  longest_uptime = std::max(longest_uptime, c.horizon_s - started);
  EXPECT_LT(lost(restarted, LostCause::kDrift), c.horizon_s * longest_uptime / 86400);
}

Scenario small_drifting() {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  apply_override(s, "stragglers.drift_per_hour=0.002");
  return s;
}

// The study simulates the healthy iteration at the knots its campaigns reach: each knot is the
// iteration simulated at that uptime, and between knots the factor is interpolated linearly.
TEST(Drift, CampaignKnotsAreIterationsAtTheirUptime) {
  const CampaignOptions o{.days = 3, .seeds = 2, .sweep = false, .sweep_intervals_s = {}};
  const Scenario s = small_drifting();
  const CampaignReport r = run_campaign_study(s, o);
  ASSERT_GE(r.drift_iterations.size(), 3u);
  EXPECT_EQ(r.drift_iterations[0].uptime_s, 0);
  EXPECT_EQ(r.drift_iterations[0].iteration_time_s, r.iteration_time_s);
  for (std::size_t k = 1; k < r.drift_iterations.size(); ++k) {
    EXPECT_EQ(r.drift_iterations[k].uptime_s, drift_knot_uptime_s(static_cast<std::int32_t>(k)));
    EXPECT_GT(r.drift_iterations[k].iteration_time_s, r.drift_iterations[k - 1].iteration_time_s);
  }
  Scenario at = s;
  at.stragglers.uptime_h = r.drift_iterations[2].uptime_s / 3600;
  RunOptions without_whatifs;
  without_whatifs.straggler_whatifs = false;
  EXPECT_EQ(run_iteration_study(at, without_whatifs).report.iteration_time_s, r.drift_iterations[2].iteration_time_s);

  const auto t = std::make_shared<const topo::Topology>(topo::Topology::build(effective_cluster(s)));
  IterationOracle oracle(s, t);
  const double t0 = oracle.iteration_time_s({});
  const double t1 = r.drift_iterations[1].iteration_time_s;
  const double t2 = r.drift_iterations[2].iteration_time_s;
  EXPECT_DOUBLE_EQ(oracle.drift_factor(0), 1);
  EXPECT_DOUBLE_EQ(oracle.drift_factor(1800), (t0 + t1) / 2 / t0);
  EXPECT_DOUBLE_EQ(oracle.drift_factor(5400), (t1 + t2) / 2 / t0);

  Scenario steady = s;
  steady.stragglers.drift_per_hour = 0;
  const CampaignReport no_drift = run_campaign_study(steady, o);
  EXPECT_TRUE(no_drift.drift_iterations.empty());
  EXPECT_EQ(no_drift.lost_s[static_cast<std::size_t>(LostCause::kDrift)], 0);
  EXPECT_GT(r.lost_s[static_cast<std::size_t>(LostCause::kDrift)], 0);
  EXPECT_LT(r.ettr.mean, no_drift.ettr.mean);
  EXPECT_EQ(to_json(run_campaign_study(s, o)), to_json(r));
  EXPECT_NE(to_json(r).find("\"drift_iterations\""), std::string::npos);
}

// A campaign that runs its whole horizon without a restart reaches the longest uptime: with 3650
// days the last knot sits at 3650 days (87,600 h, the bound of stragglers.uptime_h) rather than
// at 2^17 h, which no scenario may ask for.
TEST(Drift, TheLongestCampaignEndsAtTheLastKnot) {
  Scenario s = small_drifting();
  s.failures.rate_scale = 1e-9;  // nothing fails in ten years
  const CampaignOptions o{.days = 3650, .seeds = 1, .sweep = false, .sweep_intervals_s = {}};
  const CampaignReport r = run_campaign_study(s, o);
  ASSERT_EQ(r.drift_iterations.size(), static_cast<std::size_t>(kLastDriftKnot) + 1);
  EXPECT_EQ(r.drift_iterations.back().uptime_s, 3650 * 86400.0);
  EXPECT_GT(r.drift_iterations.back().iteration_time_s, r.drift_iterations[kLastDriftKnot - 1].iteration_time_s);
  EXPECT_EQ(r.job_failures, 0);
}

TEST(Drift, BadParametersNameTheirKey) {
  const auto key_of = [](const std::string& assignment) {
    return thrown_key([&] {
      Scenario s = dp_scenario();
      apply_override(s, assignment);
      static_cast<void>(run_iteration_study(s));
    });
  };
  EXPECT_EQ(key_of("stragglers.drift_per_hour=-0.1"), "stragglers.drift_per_hour");
  EXPECT_EQ(key_of("stragglers.drift_per_hour=2"), "stragglers.drift_per_hour");
  EXPECT_EQ(key_of("stragglers.drift_host_fraction=1.5"), "stragglers.drift_host_fraction");
  EXPECT_EQ(key_of("stragglers.drift_cv=-1"), "stragglers.drift_cv");
  EXPECT_EQ(key_of("stragglers.uptime_h=-3"), "stragglers.uptime_h");
}

}  // namespace
}  // namespace megasim::scenarios
