// `run --samples N` (scenarios/studies/samples_study.h): quantiles by hand, sample seeds, and
// samples that agree with the full simulation of their seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/samples_study.h"
#include "sim/error.h"
#include "tests/scenarios/straggler_test_util.h"

namespace megasim::scenarios {
namespace {

using testing::dp_scenario;

// Linear interpolation at q (n - 1): of 1, 2, 3, 4, 5 the 5th percentile sits at position 0.2
// (1.2), the 95th at 3.8 (4.8); the order of the input does not matter.
TEST(SampleQuantile, InterpolatesBetweenOrderStatistics) {
  const std::vector<double> v{5, 3, 1, 4, 2};
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.05), 1.2);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.95), 4.8);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 1), 5);
  EXPECT_DOUBLE_EQ(sample_quantile({2, 1}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(sample_quantile({7}, 0.95), 7);
}

TEST(SampleSeed, SampleZeroIsTheScenarioSeedAndTheRestAreDistinct) {
  EXPECT_EQ(sample_seed(42, 0), 42u);
  std::set<std::uint64_t> seeds;
  for (std::int64_t i = 0; i < 1000; ++i) seeds.insert(sample_seed(42, i));
  EXPECT_EQ(seeds.size(), 1000u);
  EXPECT_EQ(sample_seed(42, 7), sample_seed(42, 7));
  EXPECT_NE(sample_seed(42, 7), sample_seed(43, 7));
}

// With jitter every sample draws its own compute times: each sample is exactly the iteration of
// the scenario run with that sample's seed, sample 0 is the scenario's own, the spread brackets
// the median, and the whole study is deterministic.
TEST(SamplesStudy, EachSampleIsTheSimulationOfItsSeed) {
  Scenario s = dp_scenario();
  apply_override(s, "stragglers.jitter_cv=0.05");
  const RunResult first = run_iteration_study(s);
  const SampleReport r = run_samples_study(s, 5, first);
  ASSERT_EQ(r.seeds.size(), 5u);
  ASSERT_EQ(r.iteration_time_s.size(), 5u);
  EXPECT_EQ(r.seeds[0], s.seed);
  EXPECT_EQ(r.iteration_time_s[0], first.report.iteration_time_s);
  EXPECT_EQ(r.mfu[0], first.report.mfu);
  Scenario third = s;
  third.seed = r.seeds[3];
  const RunResult alone = run_iteration_study(third);
  EXPECT_EQ(r.iteration_time_s[3], alone.report.iteration_time_s);
  EXPECT_EQ(r.mfu[3], alone.report.mfu);
  EXPECT_GT(std::set<double>(r.iteration_time_s.begin(), r.iteration_time_s.end()).size(), 1u);
  const auto [lo, hi] = std::ranges::minmax(r.iteration_time_s);
  EXPECT_LE(lo, r.iteration_time.p5);
  EXPECT_LE(r.iteration_time.p5, r.iteration_time.median);
  EXPECT_LE(r.iteration_time.median, r.iteration_time.p95);
  EXPECT_LE(r.iteration_time.p95, hi);
  // A slower iteration is a lower MFU: the MFU quantiles mirror the time's.
  EXPECT_DOUBLE_EQ(r.mfu_spread.median, first.report.mfu * first.report.iteration_time_s / r.iteration_time.median);
  const SampleReport again = run_samples_study(s, 5, first);
  EXPECT_EQ(again.seeds, r.seeds);
  EXPECT_EQ(again.iteration_time_s, r.iteration_time_s);
}

// Four servers under one set of rail ToRs: every flow has one path, so with no stragglers nothing
// the seed decides changes the iteration, and every sample is the same.
TEST(SamplesStudy, WithoutRandomEffectsEverySampleIsTheSame) {
  const Scenario s = dp_scenario();
  const RunResult first = run_iteration_study(s);
  const SampleReport r = run_samples_study(s, 3, first);
  for (const double t : r.iteration_time_s) EXPECT_EQ(t, first.report.iteration_time_s);
  EXPECT_EQ(r.iteration_time.p5, r.iteration_time.p95);
}

TEST(SamplesStudy, ACountOutsideItsBoundsIsAnErrorNamingTheOption) {
  const Scenario s = dp_scenario();
  const RunResult first = run_iteration_study(s);
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{-1}, kMaxSamples + 1}) {
    try {
      run_samples_study(s, n, first);
      FAIL() << n;
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "--samples");
    }
  }
}

}  // namespace
}  // namespace megasim::scenarios
