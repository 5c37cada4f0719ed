// The MFU waterfall of `megasim explain` (scenarios/studies/explain_study.h): a hand-computed case,
// the steps summing to the difference, nothing to explain between a run and itself, and more
// micro-batches showing up as a smaller bubble.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/explain_study.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

double step(const ExplainReport& r, const std::string& mechanism) {
  for (const ExplainStep& s : r.steps) {
    if (s.mechanism == mechanism) return s.mfu_change;
  }
  ADD_FAILURE() << "no step " << mechanism;
  return 0;
}

// Same work and time (MFU 0.5), 1 s of A's 2 s of bubble turned into waiting in B. Time per unit of
// work (c / T / MFU): A compute 1.6, bubble 0.4 (sum 2 = 1 / 0.5); B bubble 0.2, waiting 0.2. The
// bubble step takes the sum to 1.8 (MFU 1 / 1.8), the waiting step back to 2 (MFU 0.5).
TEST(ExplainMfu, HandComputedWaterfall) {
  ExplainRun a{
      .name = "a", .gpus = 8, .iteration_time_s = 10, .mfu = 0.5, .mean = {}, .ideal = std::nullopt, .added = {}};
  a.mean.compute_s = 8;
  a.mean.bubble_s = 2;
  a.mean.total_s = 10;
  ExplainRun b = a;
  b.mean.bubble_s = 1;
  b.mean.waiting_s = 1;
  const ExplainReport r = explain_mfu(a, b);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_EQ(r.steps.front().mechanism, "compute");
  EXPECT_DOUBLE_EQ(step(r, "compute"), 0);
  EXPECT_DOUBLE_EQ(step(r, "tp_exposed"), 0);
  EXPECT_NEAR(step(r, "bubble"), 1 / 1.8 - 0.5, 1e-15);
  EXPECT_NEAR(step(r, "waiting"), 0.5 - 1 / 1.8, 1e-15);
  EXPECT_DOUBLE_EQ(r.steps[4].a_share, 0.2);
  EXPECT_DOUBLE_EQ(r.steps[4].b_share, 0.1);
}

Scenario small(const std::string& override_text = "") {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  if (!override_text.empty()) apply_override(s, override_text);
  return s;
}

TEST(ExplainStudy, ARunAgainstItselfHasNothingToExplain) {
  const ExplainReport r = run_explain_study(small(), small());
  EXPECT_EQ(r.a.mfu, r.b.mfu);
  for (const ExplainStep& s : r.steps) EXPECT_EQ(s.mfu_change, 0) << s.mechanism;
}

// Four times the global batch on the same GPUs (PP 2): four times the micro-batches per replica, so
// the bubble's share of the iteration, (p - 1) / m of the compute, falls and its step raises the MFU;
// the steps sum to the whole difference.
TEST(ExplainStudy, MoreMicroBatchesShrinkTheBubbleAndTheStepsSumToTheDifference) {
  const ExplainReport r = run_explain_study(small(), small("plan.global_batch_size=256"));
  EXPECT_GT(r.b.mfu, r.a.mfu);
  EXPECT_GT(r.steps[4].a_share, r.steps[4].b_share);
  EXPECT_GT(step(r, "bubble"), 0);
  double sum = 0;
  for (const ExplainStep& s : r.steps) sum += s.mfu_change;
  EXPECT_NEAR(sum, r.b.mfu - r.a.mfu, 1e-12);
  const std::string json = to_json(r);
  for (const char* key : {"\"a\"", "\"b\"", "\"steps\"", "\"mechanism\": \"bubble\"", "\"mfu_change\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  EXPECT_NE(to_text(r).find("bubble"), std::string::npos);
}

double added(const ExplainRun& run, const std::string& mechanism) {
  for (const MechanismCost& c : run.added) {
    if (c.mechanism == mechanism) return c.seconds;
  }
  ADD_FAILURE() << "no mechanism " << mechanism;
  return 0;
}

double iteration_s(const Scenario& s) {
  RunOptions options;
  options.straggler_whatifs = false;
  return run_iteration_study(s, options).report.iteration_time_s;
}

// The production mechanisms are counterfactuals: a run's stragglers cost what the same run loses
// against itself with stragglers.enabled = false, its collisions what it loses against adaptive
// routing; the ideal breakdown and the added times sum to the iteration; and B differing from A by
// a slow host only has the same ideal run, so the breakdown steps are nothing and the difference
// is in the production terms.
TEST(ExplainStudy, ProductionMechanismsAreWhatTheRunLosesWithoutThem) {
  const Scenario a = small();
  const Scenario b = small("stragglers.slow_hosts=0:1.5");
  const ExplainReport r = run_explain_study(a, b);
  ASSERT_TRUE(r.b.ideal.has_value());
  Scenario b_without = b;
  b_without.stragglers.enabled = false;
  EXPECT_DOUBLE_EQ(added(r.b, "stragglers"), r.b.iteration_time_s - iteration_s(b_without));
  EXPECT_GT(added(r.b, "stragglers"), 0);
  EXPECT_EQ(added(r.a, "stragglers"), 0);  // A has none: not simulated
  Scenario a_adaptive = a;
  a_adaptive.fabric.routing = backend::Routing::kAdaptive;
  EXPECT_DOUBLE_EQ(added(r.a, "collisions"), r.a.iteration_time_s - iteration_s(a_adaptive));
  for (const ExplainRun* run : {&r.a, &r.b}) {
    double seconds = run->ideal->total_s;
    for (const MechanismCost& c : run->added) seconds += c.seconds;
    EXPECT_NEAR(seconds, run->iteration_time_s, 1e-9 * run->iteration_time_s);
  }
  double sum = 0;
  for (const ExplainStep& s : r.steps) sum += s.mfu_change;
  EXPECT_NEAR(sum, r.b.mfu - r.a.mfu, 1e-12);
  ASSERT_EQ(r.steps.size(), 10u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(r.steps[i].mfu_change, 0, 1e-12) << r.steps[i].mechanism;
  EXPECT_LT(step(r, "stragglers"), 0);
  EXPECT_NE(to_json(r).find("\"added_s\""), std::string::npos);
}

// A mechanism the run does not have adds nothing: spray routing has no hash collisions to remove, and
// without stragglers or host gaps the ideal run is the run itself.
TEST(ExplainStudy, AbsentMechanismsAddNothing) {
  const Scenario s = small("fabric.routing=spray");
  const ExplainReport r = run_explain_study(s, s);
  EXPECT_EQ(added(r.a, "collisions"), 0);
  EXPECT_EQ(added(r.a, "stragglers"), 0);
  EXPECT_EQ(added(r.a, "interaction"), 0);
  for (const ExplainStep& step_ : r.steps) EXPECT_EQ(step_.mfu_change, 0) << step_.mechanism;
}

}  // namespace
}  // namespace megasim::scenarios
