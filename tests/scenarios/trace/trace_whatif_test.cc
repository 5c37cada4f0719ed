// The what-ifs on a trace (trace_whatif.h), with expectations derived from the schedule: in a
// data-parallel plan without overlap every replica computes, then waits for the slowest at the
// gradient reduction and again at the parameter all-gather, so a unit slower by a factor f delays
// the iteration by (f - 1) x its compute.
#include "scenarios/trace/trace_whatif.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/trace/trace_replay.h"
#include "sim/error.h"
#include "tests/scenarios/iteration_test_util.h"

namespace megasim::scenarios {
namespace {

using models::TaskCategory;
using models::TaskKind;

// Eight replicas of a 4-layer GPT, one A100 each, no overlap of the DP calls with compute.
RunResult dp_run() {
  return run_iteration_study(load_scenario_text(std::string(testing::kSmallGptOnOneServer) + R"(
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 1
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 16
use_distributed_optimizer = true
overlap_grad_reduce = false
overlap_param_gather = false
)"));
}

const StragglerWhatIf& whatif(const TraceWhatIfReport& r, const std::string& name) {
  for (const StragglerWhatIf& w : r.whatifs) {
    if (w.name == name) return w;
  }
  throw std::runtime_error("no what-if " + name);
}

TEST(TraceWhatIf, AUniformTraceHasNothingToGain) {
  const RunResult run = dp_run();
  const TraceWhatIfReport r = analyse_trace(run.workload, run.trace, 2);
  EXPECT_DOUBLE_EQ(r.replay_time_s, r.iteration_time_s);
  EXPECT_TRUE(r.slowest.empty());
  EXPECT_DOUBLE_EQ(whatif(r, "group_mean_compute").iteration_time_s, r.replay_time_s);
  EXPECT_DOUBLE_EQ(whatif(r, "fix_slowest_ranks").iteration_time_s, r.replay_time_s);
  EXPECT_FALSE(r.slowdown_by_category_s.empty());
  for (const auto& [category, seconds] : r.slowdown_by_category_s) EXPECT_DOUBLE_EQ(seconds, 0) << category;
}

// Unit 2 10% slower. Its delay is 0.1 C (C its uniform compute); at the group mean every replica
// is (1 + 0.1/8) x uniform, and so is the slow one alone when it is brought to the mean: both cost
// 0.1/8 C. With only category c at the mean, the slow unit keeps its lead and gains
// (0.1 - 0.1/8) C_c.
TEST(TraceWhatIf, ASlowRankIsFoundAndItsCostAttributed) {
  const RunResult run = dp_run();
  const ComputeDurations uniform = compute_durations(run.workload, run.trace);
  ComputeDurations d = uniform;
  for (sim::SimTime& t : d[2]) t = static_cast<sim::SimTime>(std::llround(static_cast<double>(t) * 1.1));
  const backend::Trace slow = replay_trace(run.workload, run.trace, d);
  const TraceWhatIfReport r = analyse_trace(run.workload, slow, 1);

  std::map<std::string, double> compute_s;
  double c = 0;
  const auto& tasks = run.workload.stages[0].tasks;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].kind != TaskKind::kCompute) continue;
    compute_s[std::string(models::to_string(tasks[i].category))] += sim::to_seconds(uniform[2][i]);
    c += sim::to_seconds(uniform[2][i]);
  }
  const double t0 = sim::to_seconds(run.trace.iteration_time);
  const double rounding = 2e-9 * static_cast<double>(tasks.size());
  EXPECT_DOUBLE_EQ(r.replay_time_s, sim::to_seconds(slow.iteration_time));
  EXPECT_NEAR(r.replay_time_s - t0, 0.1 * c, rounding);
  ASSERT_FALSE(r.slowest.empty());
  EXPECT_EQ(r.slowest[0].ranks, std::vector<std::int64_t>{2});
  EXPECT_NEAR(r.slowest[0].slowdown, 1.1 / (1 + 0.1 / 8), 1e-6);
  EXPECT_EQ(r.slowest.size(), 1u);
  EXPECT_NEAR(whatif(r, "group_mean_compute").iteration_time_s - t0, 0.1 / 8 * c, rounding);
  EXPECT_NEAR(whatif(r, "fix_slowest_ranks").iteration_time_s - t0, 0.1 / 8 * c, rounding);
  for (const auto& [category, seconds] : r.slowdown_by_category_s) {
    EXPECT_NEAR(seconds, (0.1 - 0.1 / 8) * compute_s[category], rounding) << category;
  }
  EXPECT_TRUE(testing::balanced_json(to_json(r)));
  EXPECT_NE(to_text(r).find("rank 2 (stage 0, replica 2) x1.086"), std::string::npos) << to_text(r);
}

// The pipeline of trace_replay_test's hand-made case with a heavier last stage: stage 0 F 2 ms and
// B 5 ms (7 ms), stage 1 F 4 ms and B 6 ms (10 ms), transfers 1 ms: F0 [0, 2], [2, 3], F1 [3, 7],
// B1 [7, 13], [13, 14], B0 [14, 19]. Balanced, the last stage runs at 7/10: F1 2.8 ms, B1 4.2 ms,
// and the iteration ends at 2 + 1 + 7 + 1 + 5 = 16 ms.
TEST(TraceWhatIf, BalancedLastStageScalesItToTheOthers) {
  const models::Workload w = testing::two_stage_pipeline();
  const backend::Trace t = testing::trace({testing::unit(0, 0, {0}, {{0, 2}, {2, 3, 2}, {2, 14, 13}, {14, 19}}),
                                           testing::unit(1, 0, {1}, {{0, 3, 2}, {3, 7}, {7, 13}, {13, 14, 13}})},
                                          19);
  const TraceWhatIfReport r = analyse_trace(w, t, 1);
  EXPECT_DOUBLE_EQ(r.replay_time_s, 0.019);
  EXPECT_NEAR(whatif(r, "balanced_last_stage").iteration_time_s, 0.016, 1e-12);
  EXPECT_NE(whatif(r, "balanced_last_stage").description.find("x0.700"), std::string::npos);
  EXPECT_THROW(analyse_trace(w, t, -1), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::scenarios
