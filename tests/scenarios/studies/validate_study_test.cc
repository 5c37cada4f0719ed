// `megasim validate`'s comparison (scenarios/studies/validate_study.h) on a hand-built two-stage
// workload and hand-made traces whose every record is written below, so every expected row is a sum
// worked out by hand from the record tables.
#include "scenarios/studies/validate_study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "sim/time.h"

namespace megasim::scenarios {
namespace {

using models::TaskCategory;
using models::TaskKind;

constexpr double kUs = 1e-6;

models::Task task(TaskKind kind, TaskCategory category) {
  models::Task t;
  t.kind = kind;
  t.category = category;
  switch (kind) {
    case TaskKind::kCompute:
      t.stream = models::StreamKind::kCompute;
      break;
    case TaskKind::kPpSend:
    case TaskKind::kPpRecv:
      t.stream = models::StreamKind::kPp;
      break;
    case TaskKind::kDpCollective:
      t.stream = models::StreamKind::kDp;
      break;
  }
  return t;
}

// TP 2 x PP 2: ranks 0 and 1 run stage 0, ranks 2 and 3 stage 1. The task order of each stage:
//   stage 0: data loading, forward, send activations, recv gradients, backward, optimizer
//   stage 1: data loading, recv activations, forward, backward, send gradients, optimizer
models::Workload two_stage_workload() {
  models::Workload w;
  w.plan.tp = 2;
  w.plan.pp = 2;
  w.plan.dp = 1;
  w.plan.virtual_stages = 1;
  w.plan.num_microbatches = 1;
  w.plan.world_size = 4;
  w.stages.resize(2);
  w.stages[0].tasks = {
      task(TaskKind::kCompute, TaskCategory::kDataLoading),    task(TaskKind::kCompute, TaskCategory::kForward),
      task(TaskKind::kPpSend, TaskCategory::kPipelineForward), task(TaskKind::kPpRecv, TaskCategory::kPipelineBackward),
      task(TaskKind::kCompute, TaskCategory::kBackward),       task(TaskKind::kCompute, TaskCategory::kOptimizer)};
  w.stages[1].tasks = {
      task(TaskKind::kCompute, TaskCategory::kDataLoading),     task(TaskKind::kPpRecv, TaskCategory::kPipelineForward),
      task(TaskKind::kCompute, TaskCategory::kForward),         task(TaskKind::kCompute, TaskCategory::kBackward),
      task(TaskKind::kPpSend, TaskCategory::kPipelineBackward), task(TaskKind::kCompute, TaskCategory::kOptimizer)};
  return w;
}

// (start, end) in microseconds, times `scale`.
backend::TraceUnit unit(std::vector<std::int64_t> ranks, std::int32_t stage,
                        const std::vector<std::pair<double, double>>& us, double scale = 1.0) {
  backend::TraceUnit u;
  u.ranks = std::move(ranks);
  u.stage = stage;
  u.replica = 0;
  for (const auto& [start, end] : us) {
    backend::TaskRecord r;
    r.start = sim::from_seconds(start * scale * kUs);
    r.transfer_start = r.start;
    r.end = sim::from_seconds(end * scale * kUs);
    u.records.push_back(r);
  }
  return u;
}

// The simulator's side: one unit per TP group.
//   stage 0: DL 20, forward 1000, send 500, recv 4000, backward 2000, optimizer 500; ends at 7520
//   stage 1: DL 20, recv 1500, forward 1000, backward 2000, send 500, optimizer 500; ends at 5520
backend::Trace predicted_trace() {
  backend::Trace t;
  t.backend = "sim";
  t.units.push_back(unit({0, 1}, 0, {{0, 20}, {20, 1020}, {1020, 1520}, {1020, 5020}, {5020, 7020}, {7020, 7520}}));
  t.units.push_back(unit({2, 3}, 1, {{0, 20}, {20, 1520}, {1520, 2520}, {2520, 4520}, {4520, 5020}, {5020, 5520}}));
  t.iteration_time = sim::from_seconds(7520 * kUs);
  return t;
}

// A measured iteration, one unit per rank, every time times `scale` (at scale 1, in µs):
//   rank 0: DL 50, forward 1200, send 600, recv 4000, backward 2400, optimizer 600; ends at 8250
//   rank 1: DL 50, forward 1400, send 400, recv 3800, backward 2400, optimizer 600; ends at 8250
//   rank 2: DL 50, recv 1800, forward 1200, backward 2200, send 500, optimizer 500; ends at 6250
//   rank 3: DL 50, recv 1800, forward 1200, backward 2000, send 700, optimizer 600; ends at 6350
backend::Trace measured_trace(double scale) {
  backend::Trace t;
  t.backend = "cpu";
  t.units.push_back(unit({0}, 0, {{0, 50}, {50, 1250}, {1250, 1850}, {1250, 5250}, {5250, 7650}, {7650, 8250}}, scale));
  t.units.push_back(unit({1}, 0, {{0, 50}, {50, 1450}, {1450, 1850}, {1450, 5250}, {5250, 7650}, {7650, 8250}}, scale));
  t.units.push_back(unit({2}, 1, {{0, 50}, {50, 1850}, {1850, 3050}, {3050, 5250}, {5250, 5750}, {5750, 6250}}, scale));
  t.units.push_back(unit({3}, 1, {{0, 50}, {50, 1850}, {1850, 3050}, {3050, 5050}, {5050, 5750}, {5750, 6350}}, scale));
  t.iteration_time = sim::from_seconds(8250 * scale * kUs);
  return t;
}

double percent(double predicted, double measured) {
  return (predicted - measured) / measured * 100;
}

const ValidationRow* find_op(const ValidationReport& r, TaskCategory category) {
  for (const ValidationRow& row : r.per_op) {
    if (row.name == models::to_string(category)) return &row;
  }
  return nullptr;
}

constexpr double kTol = 1e-12;

// Four measured iterations at scales 1.2, 0.9, 1.0, 1.1 (8250 µs × scale): sorted 0.9, 1.0, 1.1,
// 1.2, and with an even count the upper middle (order[size / 2]) is compared: index 3, scale 1.1.
TEST(ValidateStudy, EvenCountComparesTheUpperMiddleIteration) {
  const models::Workload w = two_stage_workload();
  const ValidationReport r =
      compare(w, predicted_trace(),
              {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0), measured_trace(1.1)}, "two stages");
  EXPECT_EQ(r.scenario, "two stages");
  EXPECT_EQ(r.backend, "cpu");
  ASSERT_EQ(r.measured_iterations.size(), 4u);
  EXPECT_NEAR(r.measured_iterations[0], 8250 * 1.2 * kUs, kTol);  // run order kept
  EXPECT_NEAR(r.measured_iterations[1], 8250 * 0.9 * kUs, kTol);
  EXPECT_NEAR(r.measured_iterations[2], 8250 * 1.0 * kUs, kTol);
  EXPECT_NEAR(r.measured_iterations[3], 8250 * 1.1 * kUs, kTol);
  EXPECT_EQ(r.median_iteration, 3u);
  EXPECT_EQ(r.iteration.name, "iteration");
  EXPECT_NEAR(r.iteration.predicted_s, 7520 * kUs, kTol);
  EXPECT_NEAR(r.iteration.measured_s, 9075 * kUs, kTol);
  EXPECT_NEAR(r.iteration.error_percent, percent(7520, 9075), 1e-9);
}

TEST(ValidateStudy, OddCountComparesTheMiddleIteration) {
  const models::Workload w = two_stage_workload();
  const ValidationReport r =
      compare(w, predicted_trace(), {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0)}, "s");
  EXPECT_EQ(r.median_iteration, 2u);
  EXPECT_NEAR(r.iteration.measured_s, 8250 * kUs, kTol);
  EXPECT_NEAR(r.iteration.error_percent, percent(7520, 8250), 1e-9);
  // One iteration: that one.
  const ValidationReport one = compare(w, predicted_trace(), {measured_trace(0.9)}, "s");
  EXPECT_EQ(one.median_iteration, 0u);
  EXPECT_NEAR(one.iteration.measured_s, 8250 * 0.9 * kUs, kTol);
}

// Per op type, seconds per rank averaged over the four ranks; the predicted unit of ranks {0, 1}
// counts for both. At the compared scale 1.1:
//   forward     p (1000 × 4) / 4 = 1000        m (1200 + 1400 + 1200 + 1200) / 4 × 1.1 = 1375
//   backward    p 2000                        m (2400 + 2400 + 2200 + 2000) / 4 × 1.1 = 2475
//   optimizer   p 500                         m (600 + 600 + 500 + 600) / 4 × 1.1 = 632.5
//   pipeline_forward   p (500 + 500 + 1500 + 1500) / 4 = 1000   m (600 + 400 + 1800 + 1800) / 4 × 1.1 = 1265
//   pipeline_backward  p (4000 + 4000 + 500 + 500) / 4 = 2250   m (4000 + 3800 + 500 + 700) / 4 × 1.1 = 2475
//   data_loading  p 20, m 55: both under 0.1 ms, error 0
TEST(ValidateStudy, PerOpRowsAverageCategorySecondsOverRanks) {
  const ValidationReport r =
      compare(two_stage_workload(), predicted_trace(),
              {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0), measured_trace(1.1)}, "s");
  struct Expected {
    TaskCategory category;
    double predicted_us;
    double measured_us;
  };
  const std::vector<Expected> expected = {
      {TaskCategory::kForward, 1000, 1375},          {TaskCategory::kBackward, 2000, 2475},
      {TaskCategory::kOptimizer, 500, 632.5},        {TaskCategory::kPipelineForward, 1000, 1265},
      {TaskCategory::kPipelineBackward, 2250, 2475}, {TaskCategory::kDataLoading, 20, 55},
  };
  EXPECT_EQ(r.per_op.size(), expected.size());  // no row for categories neither side has
  for (const Expected& e : expected) {
    const ValidationRow* row = find_op(r, e.category);
    ASSERT_NE(row, nullptr) << models::to_string(e.category);
    EXPECT_NEAR(row->predicted_s, e.predicted_us * kUs, kTol) << row->name;
    EXPECT_NEAR(row->measured_s, e.measured_us * kUs, kTol) << row->name;
    const double error = e.category == TaskCategory::kDataLoading ? 0 : percent(e.predicted_us, e.measured_us);
    EXPECT_NEAR(row->error_percent, error, 1e-9) << row->name;
  }
  EXPECT_EQ(find_op(r, TaskCategory::kGradientReduce), nullptr);
}

// Per rank at scale 1.1: busy compute (DL + forward + backward + optimizer) and last end.
//   rank  stage  compute p  compute m                      end p  end m
//   0     0      3520       (50+1200+2400+600) 4250 × 1.1   7520   8250 × 1.1
//   1     0      3520       (50+1400+2400+600) 4450 × 1.1   7520   8250 × 1.1
//   2     1      3520       (50+1200+2200+500) 3950 × 1.1   5520   6250 × 1.1
//   3     1      3520       (50+1200+2000+600) 3850 × 1.1   5520   6350 × 1.1
TEST(ValidateStudy, PerRankComputeAndEnd) {
  const ValidationReport r =
      compare(two_stage_workload(), predicted_trace(),
              {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0), measured_trace(1.1)}, "s");
  struct Expected {
    std::int64_t rank;
    std::int64_t stage;
    double compute_p, compute_m, end_p, end_m;
  };
  const std::vector<Expected> expected = {
      {0, 0, 3520, 4250 * 1.1, 7520, 8250 * 1.1},
      {1, 0, 3520, 4450 * 1.1, 7520, 8250 * 1.1},
      {2, 1, 3520, 3950 * 1.1, 5520, 6250 * 1.1},
      {3, 1, 3520, 3850 * 1.1, 5520, 6350 * 1.1},
  };
  ASSERT_EQ(r.per_rank.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const RankValidation& k = r.per_rank[i];
    const Expected& e = expected[i];
    EXPECT_EQ(k.rank, e.rank);
    EXPECT_EQ(k.stage, e.stage) << "rank " << e.rank;
    EXPECT_EQ(k.replica, 0) << "rank " << e.rank;
    EXPECT_NEAR(k.compute.predicted_s, e.compute_p * kUs, kTol) << "rank " << e.rank;
    EXPECT_NEAR(k.compute.measured_s, e.compute_m * kUs, kTol) << "rank " << e.rank;
    EXPECT_NEAR(k.compute.error_percent, percent(e.compute_p, e.compute_m), 1e-9) << "rank " << e.rank;
    EXPECT_NEAR(k.end.predicted_s, e.end_p * kUs, kTol) << "rank " << e.rank;
    EXPECT_NEAR(k.end.measured_s, e.end_m * kUs, kTol) << "rank " << e.rank;
    EXPECT_NEAR(k.end.error_percent, percent(e.end_p, e.end_m), 1e-9) << "rank " << e.rank;
  }
}

// Under 0.1 ms on both sides a row has no error; one side at or above it gives the error.
TEST(ValidateStudy, NegligibleRowsHaveNoError) {
  // Every time at scale 0.01: the predicted side keeps its times, the measured ones are 1% of the
  // tables (forward 12.5 µs, data loading 0.5 µs, ...): only rows whose prediction is at least
  // 0.1 ms keep an error.
  const ValidationReport r = compare(two_stage_workload(), predicted_trace(), {measured_trace(0.01)}, "s");
  const ValidationRow* data_loading = find_op(r, TaskCategory::kDataLoading);
  ASSERT_NE(data_loading, nullptr);
  EXPECT_NEAR(data_loading->measured_s, 0.5 * kUs, kTol);
  EXPECT_EQ(data_loading->error_percent, 0);  // 20 µs and 0.5 µs
  const ValidationRow* forward = find_op(r, TaskCategory::kForward);
  ASSERT_NE(forward, nullptr);
  EXPECT_NEAR(forward->error_percent, percent(1000, 12.5), 1e-9);  // predicted 1 ms is not negligible

  // Both sides tiny: a predicted trace whose records all last under 0.1 ms.
  backend::Trace tiny;
  tiny.backend = "sim";
  tiny.units.push_back(unit({0, 1}, 0, {{0, 1}, {1, 2}, {2, 3}, {2, 4}, {4, 6}, {6, 7}}));
  tiny.units.push_back(unit({2, 3}, 1, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}}));
  tiny.iteration_time = sim::from_seconds(7 * kUs);
  const ValidationReport both = compare(two_stage_workload(), tiny, {measured_trace(0.01)}, "s");
  for (const ValidationRow& row : both.per_op) EXPECT_EQ(row.error_percent, 0) << row.name;
  EXPECT_EQ(both.iteration.error_percent, 0);  // 7 µs against 82.5 µs
  for (const RankValidation& k : both.per_rank) {
    EXPECT_EQ(k.compute.error_percent, 0);
    EXPECT_EQ(k.end.error_percent, 0);
  }
}

// The number after `"key": ` at or after `from` in pretty-printed JSON.
double json_number(const std::string& json, const std::string& key, std::size_t from = 0) {
  const std::string needle = "\"" + key + "\": ";
  const std::size_t at = json.find(needle, from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no key " << key;
    return std::nan("");
  }
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

TEST(ValidateStudy, JsonHasTheDocumentedKeys) {
  const ValidationReport r =
      compare(two_stage_workload(), predicted_trace(),
              {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0), measured_trace(1.1)}, "two stages");
  const std::string json = to_json(r);
  EXPECT_NEAR(json_number(json, "predicted_iteration_time_s"), 7520 * kUs, kTol);
  EXPECT_NEAR(json_number(json, "measured_iteration_time_s"), 9075 * kUs, kTol);
  EXPECT_NEAR(json_number(json, "error_percent"), percent(7520, 9075), 1e-9);

  const std::size_t iterations = json.find("\"measured_iterations_s\": [");
  ASSERT_NE(iterations, std::string::npos);
  const char* p = json.c_str() + json.find('[', iterations) + 1;
  std::vector<double> values;
  for (int i = 0; i < 4; ++i) {
    char* end = nullptr;
    values.push_back(std::strtod(p, &end));
    ASSERT_NE(end, p);
    p = end;
    while (*p == ',' || *p == ' ' || *p == '\n') ++p;
  }
  EXPECT_EQ(*p, ']');
  EXPECT_NEAR(values[0], 8250 * 1.2 * kUs, kTol);
  EXPECT_NEAR(values[1], 8250 * 0.9 * kUs, kTol);
  EXPECT_NEAR(values[2], 8250 * 1.0 * kUs, kTol);
  EXPECT_NEAR(values[3], 8250 * 1.1 * kUs, kTol);

  // per_op: an object keyed by category name.
  const std::size_t per_op = json.find("\"per_op\": {");
  ASSERT_NE(per_op, std::string::npos);
  const std::size_t forward = json.find("\"forward\": {", per_op);
  ASSERT_NE(forward, std::string::npos);
  EXPECT_NEAR(json_number(json, "predicted_s", forward), 1000 * kUs, kTol);
  EXPECT_NEAR(json_number(json, "measured_s", forward), 1375 * kUs, kTol);
  EXPECT_NEAR(json_number(json, "error_percent", forward), percent(1000, 1375), 1e-9);

  // per_rank: a list of {rank, stage, replica, compute, end}; rank 1's measured compute is 4450 × 1.1.
  const std::size_t per_rank = json.find("\"per_rank\": [");
  ASSERT_NE(per_rank, std::string::npos);
  EXPECT_GT(per_rank, per_op);
  const std::size_t rank1 = json.find("\"rank\": 1", per_rank);
  ASSERT_NE(rank1, std::string::npos);
  const std::size_t compute = json.find("\"compute\": {", rank1);
  ASSERT_NE(compute, std::string::npos);
  EXPECT_NEAR(json_number(json, "measured_s", compute), 4450 * 1.1 * kUs, kTol);
  const std::size_t end = json.find("\"end\": {", compute);
  ASSERT_NE(end, std::string::npos);
  EXPECT_NEAR(json_number(json, "predicted_s", end), 7520 * kUs, kTol);
  EXPECT_NE(json.find("\"scenario\": \"two stages\""), std::string::npos);
  EXPECT_NE(json.find("\"backend\": \"cpu\""), std::string::npos);
  EXPECT_EQ(json.back(), '\n');
}

TEST(ValidateStudy, TextNamesTheRunAndTheErrors) {
  const ValidationReport r =
      compare(two_stage_workload(), predicted_trace(),
              {measured_trace(1.2), measured_trace(0.9), measured_trace(1.0), measured_trace(1.1)}, "two stages");
  const std::string text = to_text(r);
  EXPECT_NE(text.find("two stages"), std::string::npos);
  EXPECT_NE(text.find("cpu"), std::string::npos);
  EXPECT_NE(text.find("4 measured iterations"), std::string::npos);
  // Iteration: 7.52 ms against 9.075 ms, -17.1%.
  EXPECT_NE(text.find("predicted 0.0075 s"), std::string::npos) << text;
  EXPECT_NE(text.find("measured 0.0091 s"), std::string::npos) << text;
  EXPECT_NE(text.find("-17.1%"), std::string::npos) << text;
  // Forward: 1 ms against 1.375 ms, -27.3%.
  EXPECT_NE(text.find("-27.3%"), std::string::npos) << text;
  for (const char* name : {"forward", "backward", "optimizer", "pipeline_forward", "pipeline_backward"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace megasim::scenarios

namespace megasim::scenarios {
namespace {

// Shard mode: rank 2 (stage 1) measured alone, compute tasks only. Predicted compute of rank 2 (its
// TP group's unit): 20 + 1000 + 2000 + 500 = 3520 µs; measured (rank 2's unit above): 50 + 1200 +
// 2200 + 500 = 3950 µs. The pipeline rows drop out.
TEST(ValidateStudy, ShardModeComparesOneRanksCompute) {
  backend::Trace shard = measured_trace(1.0);
  shard.units = {shard.units[2]};
  const ValidationReport r = compare_compute(two_stage_workload(), predicted_trace(), {shard}, "two stages");
  EXPECT_EQ(r.iteration.name, "compute");
  EXPECT_NEAR(r.iteration.predicted_s, 3520 * kUs, 1e-12);
  EXPECT_NEAR(r.iteration.measured_s, 3950 * kUs, 1e-12);
  EXPECT_NEAR(r.iteration.error_percent, percent(3520, 3950), 1e-9);
  ASSERT_EQ(r.per_rank.size(), 1u);
  EXPECT_EQ(r.per_rank[0].rank, 2);
  EXPECT_EQ(r.per_rank[0].stage, 1);
  for (const ValidationRow& row : r.per_op) {
    EXPECT_TRUE(row.name == "forward" || row.name == "backward" || row.name == "optimizer" ||
                row.name == "data_loading")
        << row.name;
  }
  const ValidationRow* backward = find_op(r, TaskCategory::kBackward);
  ASSERT_NE(backward, nullptr);
  EXPECT_NEAR(backward->predicted_s, 2000 * kUs, 1e-12);
  EXPECT_NEAR(backward->measured_s, 2200 * kUs, 1e-12);
}

}  // namespace
}  // namespace megasim::scenarios
