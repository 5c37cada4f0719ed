// The campaign engine's events: flaps against the NCCL timeout, damaged fabric, the spare pool,
// uploads, determinism, and the bookkeeping that puts every second of wall time in one bucket.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/scenarios/campaign_test_util.h"

namespace megasim::scenarios {
namespace {

using testing::closed_form_oracle;
using testing::fixed_cost_config;
using testing::flap;
using testing::job_failure;
using testing::kDay;
using testing::lost;

double accounted_s(const SeedOutcome& o) {
  return o.productive_s + std::accumulate(o.lost_s.begin(), o.lost_s.end(), 0.0);
}

// Flaps of a fixed duration on NIC cables (no alternative path: the flows wait out the flap).
SeedOutcome run_flaps(double flap_s, double timeout_s) {
  CampaignConfig c = fixed_cost_config(10 * kDay);
  c.processes = {flap(1 / 3600.0, models::FabricTier::kNic)};
  c.failures.link_flap_durations = models::FlapDurations::kFixed;
  c.failures.link_flap_duration_s = flap_s;
  c.stall_timeout_s = timeout_s;
  c.checkpoint.interval_s = 600;
  return run_campaign_seed(c, closed_form_oracle(), 7, true);
}

TEST(CampaignEvents, FlapShorterThanTheTimeoutOnlyStalls) {
  const SeedOutcome o = run_flaps(5, 7.5);
  ASSERT_GT(o.flaps, 100);
  EXPECT_EQ(o.job_failures, 0);
  EXPECT_EQ(lost(o, LostCause::kLostWork), 0);
  // Every flap stalls the job for its whole duration (no checkpoint cost, so the job always trains).
  EXPECT_NEAR(lost(o, LostCause::kStall), 5.0 * static_cast<double>(o.flaps), 1e-6);
}

TEST(CampaignEvents, FlapLongerThanTheTimeoutFailsTheJobWhenTheTimeoutFires) {
  const SeedOutcome o = run_flaps(10, 7.5);
  ASSERT_GT(o.flaps, 100);
  EXPECT_EQ(o.job_failures, o.flaps);
  EXPECT_GT(lost(o, LostCause::kLostWork), 0);
  // The job stalls 7.5 s, then fails; the flap's job_failed entry comes 7.5 s after it.
  EXPECT_NEAR(lost(o, LostCause::kStall), 7.5 * static_cast<double>(o.flaps), 1e-6);
  for (std::size_t i = 0; i + 2 < o.timeline.size(); ++i) {
    if (o.timeline[i].kind != "flap") continue;
    EXPECT_EQ(o.timeline[i + 1].kind, "stall");
    EXPECT_EQ(o.timeline[i + 2].kind, "job_failed");
    EXPECT_NEAR(o.timeline[i + 2].time_s - o.timeline[i].time_s, 7.5, 1e-9);
  }
}

// A switch-to-switch cable has other paths: the flows stall only until the fabric detects the
// failure (here 0.05 s), however long the flap.
TEST(CampaignEvents, FlapOnARoutedAroundCableStallsUntilDetection) {
  CampaignConfig c = fixed_cost_config(10 * kDay);
  c.processes = {flap(1 / 3600.0, models::FabricTier::kTorAgg)};
  c.failures.link_flap_durations = models::FlapDurations::kFixed;
  c.failures.link_flap_duration_s = 30;
  c.stall_timeout_s = 7.5;
  const SeedOutcome o = run_campaign_seed(c, closed_form_oracle(), 3, false);
  EXPECT_EQ(o.job_failures, 0);
  EXPECT_NEAR(lost(o, LostCause::kStall), 0.05 * static_cast<double>(o.flaps), 1e-6);
}

// A failed aggregation cable is routed around until repaired; iterations take twice as long
// meanwhile, so half of the training time while damaged is `degraded`.
TEST(CampaignEvents, DamagedFabricSlowsTrainingUntilRepaired) {
  CampaignConfig c = fixed_cost_config(10 * kDay);
  models::FailureProcess cable{"link.tor_agg",
                               models::Component::kLink,
                               models::FailureEffect::kDamage,
                               models::FabricTier::kTorAgg,
                               true,
                               1 / (24 * 3600.0),
                               0,
                               3600};
  c.processes = {cable};
  const SeedOutcome o = run_campaign_seed(c, closed_form_oracle(1.0, 2.0), 5, true);
  ASSERT_GT(o.failures[static_cast<std::size_t>(models::Component::kLink)], 3);
  EXPECT_EQ(o.job_failures, 0);
  // Each failure: 0.05 s stalled, then up to one hour at half speed (less when repairs overlap).
  const double failures = static_cast<double>(o.failures[static_cast<std::size_t>(models::Component::kLink)]);
  EXPECT_NEAR(lost(o, LostCause::kStall), 0.05 * failures, 1e-6);
  EXPECT_LE(lost(o, LostCause::kDegraded), failures * 0.5 * 3600 + 1e-6);
  EXPECT_GT(lost(o, LostCause::kDegraded), 0.5 * 0.5 * 3600);
  EXPECT_NEAR(accounted_s(o), c.horizon_s, 1e-6 * c.horizon_s);
}

// Each failure evicts 4 hosts; with 2 spares the job waits until the evicted hosts are back from
// repair (1 h after the failure), i.e. 1 h minus the diagnosis; with 100 spares it never waits.
TEST(CampaignEvents, EmptySparePoolMakesTheJobWaitForRepairs) {
  CampaignConfig c = fixed_cost_config(60 * kDay);
  c.processes = {job_failure(1 / (5 * kDay), 4, 3600)};
  c.recovery.diagnosis_s = 600;
  c.recovery.spare_hosts = 2;
  const SeedOutcome waits = run_campaign_seed(c, closed_form_oracle(), 11, false);
  ASSERT_GE(waits.job_failures, 5);
  EXPECT_NEAR(lost(waits, LostCause::kWaitingForSpares), static_cast<double>(waits.job_failures) * (3600 - 600), 1e-6);
  c.recovery.spare_hosts = 100;
  const SeedOutcome ready = run_campaign_seed(c, closed_form_oracle(), 11, false);
  EXPECT_EQ(ready.job_failures, waits.job_failures);  // the same failures (own RNG streams)
  EXPECT_EQ(lost(ready, LostCause::kWaitingForSpares), 0);
  EXPECT_GT(ready.ettr, waits.ettr);
}

// A checkpoint counts only once uploaded: a slow upload discards some checkpoints and loses more work.
TEST(CampaignEvents, FailureBeforeTheUploadEndsDiscardsTheCheckpoint) {
  CampaignConfig c = fixed_cost_config(30 * kDay);
  c.processes = {job_failure(1 / 3600.0)};
  c.checkpoint.interval_s = 600;
  const SeedOutcome instant = run_campaign_seed(c, closed_form_oracle(), 2, true);
  c.checkpoint.upload_s = 300;
  const SeedOutcome slow = run_campaign_seed(c, closed_form_oracle(), 2, true);
  const auto discarded = std::count_if(slow.timeline.begin(), slow.timeline.end(),
                                       [](const TimelineEvent& e) { return e.kind == "checkpoint_discarded"; });
  EXPECT_GT(discarded, 0);
  EXPECT_GT(lost(slow, LostCause::kLostWork), lost(instant, LostCause::kLostWork));
  EXPECT_LT(slow.ettr, instant.ettr);
}

// A save due while the previous upload runs waits for it, blocking: with uploads longer than the
// interval, saving costs more than the saves themselves.
TEST(CampaignEvents, SaveWaitsForThePreviousUpload) {
  CampaignConfig c = fixed_cost_config(1 * kDay);
  c.checkpoint.interval_s = 100;
  c.checkpoint.save_blocking_s = 1;
  c.checkpoint.upload_s = 150;
  const SeedOutcome o = run_campaign_seed(c, closed_form_oracle(), 1, false);
  // Without failures every cycle is 100 s of training, 1 s of save, then 50 s more of waiting.
  const double cycle = 151;
  EXPECT_NEAR(o.ettr, 100 / cycle, 100 / kDay);
  EXPECT_NEAR(lost(o, LostCause::kCheckpointSave) + o.productive_s, kDay, 1e-6);
}

CampaignConfig busy_config() {
  CampaignConfig c;
  c.horizon_s = 20 * kDay;
  c.processes = {job_failure(1 / 7200.0, 1, 4 * 3600, "gpu"), job_failure(1 / 86400.0, 64, 8 * 3600, "switch.tor"),
                 job_failure(1 / 20000.0, 0, 0, "software"), flap(1 / 1800.0, models::FabricTier::kNic),
                 models::FailureProcess{"switch.agg", models::Component::kSwitch, models::FailureEffect::kDamage,
                                        models::FabricTier::kTorAgg, true, 1 / 40000.0, 0, 3 * 3600}};
  c.stall_timeout_s = 7.5;
  c.job_gpus = 12'288;
  return c;  // default recovery and checkpoint parameters
}

TEST(CampaignEvents, EverySecondIsInOneBucket) {
  const CampaignConfig c = busy_config();
  const SeedOutcome o = run_campaign_seed(c, closed_form_oracle(5.0, 5.2), 9, false);
  EXPECT_NEAR(accounted_s(o), c.horizon_s, 1e-6 * c.horizon_s);
  for (const double x : o.lost_s) EXPECT_GE(x, 0);
  EXPECT_GT(o.ettr, 0.3);
  EXPECT_LT(o.ettr, 1.0);
}

TEST(CampaignEvents, SameSeedSameOutcomeOtherSeedOther) {
  const CampaignConfig c = busy_config();
  const SeedOutcome a = run_campaign_seed(c, closed_form_oracle(5.0, 5.2), 9, true);
  const SeedOutcome b = run_campaign_seed(c, closed_form_oracle(5.0, 5.2), 9, true);
  const SeedOutcome other = run_campaign_seed(c, closed_form_oracle(5.0, 5.2), 10, true);
  EXPECT_EQ(a.ettr, b.ettr);
  EXPECT_EQ(a.lost_s, b.lost_s);
  EXPECT_EQ(a.failures, b.failures);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].time_s, b.timeline[i].time_s);
    EXPECT_EQ(a.timeline[i].kind, b.timeline[i].kind);
  }
  EXPECT_NE(a.ettr, other.ettr);
}

// Twice the failure rates on the same seeds: a lower mean ETTR, by more than a point.
TEST(CampaignEvents, MoreFailuresLowerEttr) {
  CampaignConfig c = busy_config();
  CampaignConfig twice = c;
  for (models::FailureProcess& p : twice.processes) p.rate_per_s *= 2;
  double sum = 0, sum_twice = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const double e = run_campaign_seed(c, closed_form_oracle(), seed, false).ettr;
    const double e2 = run_campaign_seed(twice, closed_form_oracle(), seed, false).ettr;
    sum += e;
    sum_twice += e2;
  }
  EXPECT_LT(sum_twice, sum - 20 * 0.01);
}

}  // namespace
}  // namespace megasim::scenarios
