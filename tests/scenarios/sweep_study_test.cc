// The sweep (scenarios/sweep_study.h): the candidate space against a list derived by hand from
// divisor arithmetic, agreement of every simulated row with a plain run_iteration_study, ranking and
// independence from the thread count, memory rejections, and crossing with varied keys.
#include "scenarios/sweep_study.h"
#include "iteration_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "scenarios/loader.h"
#include "scenarios/run_study.h"

namespace megasim::scenarios {
namespace {

// A 4-layer GPT (16 heads, ffn 4096) on one server of 8 A100s, global batch 8: every number below
// follows from divisors of 8 and 4.
Scenario small_scenario() {
  return load_scenario_text(std::string(testing::kSmallGptOnOneServer) + R"(
[plan]
global_batch_size = 8
sequence_parallel = true
use_distributed_optimizer = true
)");
}

using PlanKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;  // tp, pp, vpp layers, mb

PlanKey key_of(const SweepCandidate& c) {
  return {c.tp, c.pp, c.layers_per_virtual_stage, c.micro_batch_size};
}

// Candidates: tp in divisors(8) = {1,2,4,8} (all divide 16 heads and ffn 4096); pp in divisors(4)
// = {1,2,4}; layers per virtual stage 0, plus 1 at pp 2 (2 layers per stage; at pp 4 the only
// divisor is the stage itself); mb in {1,2,4,8} (powers of two up to the batch): 4 x (1+2+1) x 4 = 64.
// Valid: tp*pp divides 8 (tp,pp not in {(4,4),(8,2),(8,4)}), dp = 8/(tp*pp), mb*dp divides 8
// (mb <= 8/dp), and interleaved (pp 2, 1 layer per chunk) needs 8/(mb*dp) micro-batches even
// (mb <= 4/dp).
const std::set<PlanKey>& hand_derived_valid_plans() {
  static const std::set<PlanKey> plans{
      {1, 1, 0, 1},                                                          // dp 8
      {1, 2, 0, 1}, {1, 2, 0, 2}, {1, 2, 1, 1},                              // dp 4
      {1, 4, 0, 1}, {1, 4, 0, 2}, {1, 4, 0, 4},                              // dp 2
      {2, 1, 0, 1}, {2, 1, 0, 2},                                            // dp 4
      {2, 2, 0, 1}, {2, 2, 0, 2}, {2, 2, 0, 4}, {2, 2, 1, 1}, {2, 2, 1, 2},  // dp 2
      {2, 4, 0, 1}, {2, 4, 0, 2}, {2, 4, 0, 4}, {2, 4, 0, 8},                // dp 1
      {4, 1, 0, 1}, {4, 1, 0, 2}, {4, 1, 0, 4},                              // dp 2
      {4, 2, 0, 1}, {4, 2, 0, 2}, {4, 2, 0, 4}, {4, 2, 0, 8},                // dp 1
      {4, 2, 1, 1}, {4, 2, 1, 2}, {4, 2, 1, 4},                              // dp 1
      {8, 1, 0, 1}, {8, 1, 0, 2}, {8, 1, 0, 4}, {8, 1, 0, 8},                // dp 1
  };
  return plans;
}

TEST(SweepStudy, EnumerationEqualsTheHandDerivedList) {
  const std::vector<SweepCandidate> all = enumerate_sweep(small_scenario(), {});
  EXPECT_EQ(all.size(), 64u);
  std::set<PlanKey> valid, seen;
  for (const SweepCandidate& c : all) {
    EXPECT_TRUE(seen.insert(key_of(c)).second) << "duplicate candidate";
    if (c.status == SweepStatus::kSimulated) {
      valid.insert(key_of(c));
      EXPECT_EQ(c.dp * c.tp * c.pp, 8);
      EXPECT_EQ(c.num_microbatches * c.micro_batch_size * c.dp, 8);
      EXPECT_TRUE(c.reason.empty());
    } else {
      EXPECT_EQ(c.status, SweepStatus::kInvalid);  // a 4-layer model fits in any split
      EXPECT_NE(c.reason.find("plan."), std::string::npos) << c.reason;
    }
  }
  EXPECT_EQ(valid, hand_derived_valid_plans());
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), key_less));
}

TEST(SweepStudy, RejectionsNameMegatronsRule) {
  for (const SweepCandidate& c : enumerate_sweep(small_scenario(), {})) {
    if (c.tp == 8 && c.pp == 2) {
      EXPECT_NE(c.reason.find("divides the GPU count 8"), std::string::npos) << c.reason;
    }
    if (c.tp == 1 && c.pp == 1 && c.micro_batch_size == 2) {
      EXPECT_NE(c.reason.find("plan.global_batch_size"), std::string::npos) << c.reason;
    }
  }
}

// Each simulated row is exactly what `megasim run` of that plan reports.
TEST(SweepStudy, EveryRowAgreesWithAPlainIterationSimulation) {
  const Scenario base = small_scenario();
  const SweepReport report = run_sweep_study(base, {}, 2);
  ASSERT_EQ(report.simulated, 32u);
  for (const SweepRow& row : report.rows) {
    if (row.candidate.status != SweepStatus::kSimulated) continue;
    Scenario s = base;
    s.plan.tensor_model_parallel_size = row.candidate.tp;
    s.plan.pipeline_model_parallel_size = row.candidate.pp;
    s.plan.num_layers_per_virtual_pipeline_stage = row.candidate.layers_per_virtual_stage;
    s.plan.micro_batch_size = row.candidate.micro_batch_size;
    const IterationReport plain = run_iteration_study(s).report;
    EXPECT_EQ(row.iteration_time_s, plain.iteration_time_s);
    EXPECT_EQ(row.tokens_per_s, plain.tokens_per_s);
    EXPECT_EQ(row.mfu, plain.mfu);
    EXPECT_EQ(row.hfu, plain.hfu);
    EXPECT_EQ(row.breakdown.bubble_s, plain.mean.bubble_s);
    EXPECT_EQ(row.breakdown.dp_exposed_s, plain.mean.dp_exposed_s);
    EXPECT_EQ(row.candidate.peak_memory_bytes, plain.memory->peak().total_bytes());
    EXPECT_EQ(row.candidate.virtual_stages, plain.plan.virtual_stages);
  }
}

TEST(SweepStudy, RankedByThroughputThenKeyWhateverTheThreadCount) {
  const Scenario base = small_scenario();
  const SweepReport one = run_sweep_study(base, {}, 1);
  const SweepReport four = run_sweep_study(base, {}, 4);
  EXPECT_EQ(to_csv(one), to_csv(four));
  EXPECT_EQ(to_json(one), to_json(four));
  EXPECT_EQ(to_text(one), to_text(four));
  for (std::size_t i = 1; i < one.simulated; ++i) {
    const SweepRow& a = one.rows[i - 1];
    const SweepRow& b = one.rows[i];
    EXPECT_TRUE(a.tokens_per_s > b.tokens_per_s ||
                (a.tokens_per_s == b.tokens_per_s && key_less(a.candidate, b.candidate)));
  }
  // Rejected rows follow the simulated ones, in key order.
  for (std::size_t i = 0; i < one.rows.size(); ++i) {
    EXPECT_EQ(one.rows[i].candidate.status == SweepStatus::kSimulated, i < one.simulated);
  }
  EXPECT_TRUE(std::is_sorted(one.rows.begin() + static_cast<std::ptrdiff_t>(one.simulated), one.rows.end(),
                             [](const SweepRow& a, const SweepRow& b) { return key_less(a.candidate, b.candidate); }));
}

// The path an external executor takes (enumerate, evaluate each candidate anywhere, in any order,
// then make_sweep_report) gives the same report as run_sweep_study.
TEST(SweepStudy, RowsEvaluatedElsewhereRankTheSame) {
  const Scenario base = small_scenario();
  std::vector<SweepCandidate> candidates = enumerate_sweep(base, {});
  std::reverse(candidates.begin(), candidates.end());
  std::vector<SweepRow> rows;
  for (const SweepCandidate& c : candidates) rows.push_back(evaluate_sweep_candidate(base, c));
  const SweepReport elsewhere = make_sweep_report({}, std::move(rows));
  const SweepReport here = run_sweep_study(base, {}, 2);
  EXPECT_EQ(to_csv(elsewhere), to_csv(here));
  EXPECT_EQ(elsewhere.simulated, 32u);
  EXPECT_EQ(elsewhere.invalid, 32u);
}

// 16 layers of hidden 8192 hold 12 h^2 L = 12.9 G parameters; without the distributed optimizer
// that is 18 bytes each (bf16 weights, fp32 grads, fp32 master + Adam m, v): 232 GB, so any split
// over tp*pp <= 2 GPUs needs more than 116 GB per GPU for model state alone, over the A100's 80 GB.
TEST(SweepStudy, PlansThatDoNotFitCarryTheMemoryReason) {
  Scenario s = load_scenario_text(R"(
[cluster]
gpu = "A100"
gpus = 8
[model]
num_layers = 16
hidden_size = 8192
num_attention_heads = 64
seq_length = 256
[plan]
global_batch_size = 8
use_distributed_optimizer = false
recompute_granularity = "full"
)");
  SweepOptions o;
  o.max_micro_batch_size = 1;
  std::size_t out_of_memory = 0;
  for (const SweepCandidate& c : enumerate_sweep(s, o)) {
    if (c.status == SweepStatus::kInvalid) continue;
    if (c.tp * c.pp <= 2) {
      EXPECT_EQ(c.status, SweepStatus::kOutOfMemory) << c.tp << " " << c.pp;
    }
    if (c.status == SweepStatus::kOutOfMemory) {
      ++out_of_memory;
      EXPECT_GT(static_cast<double>(c.peak_memory_bytes), c.hbm_bytes);
      EXPECT_NE(c.reason.find("exceeds the 80 GB of HBM"), std::string::npos) << c.reason;
    } else {
      EXPECT_LE(static_cast<double>(c.peak_memory_bytes), c.hbm_bytes);
    }
  }
  EXPECT_GE(out_of_memory, 3u);  // (1,1), (1,2), (2,1) at least
}

// The report lists rejected plans in the CSV with their reason, and only counts them in the text.
TEST(SweepStudy, CsvHasEveryCandidateAndTextOnlyTheTop) {
  const SweepReport r = run_sweep_study(small_scenario(), {}, 2);
  const std::string csv = to_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 65);  // header + 64 candidates
  EXPECT_NE(csv.find(",invalid,"), std::string::npos);
  EXPECT_NE(csv.find("rank,gpus,tp,pp,dp,"), std::string::npos);
  const std::string text = to_text(r, 3);
  EXPECT_NE(text.find("64 candidate plans: 32 simulated, 0 do not fit in memory, 32 invalid"), std::string::npos)
      << text;
  EXPECT_NE(text.find("top 3 of 32"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n   4 "), std::string::npos) << text;  // no fourth row
  const std::string json = to_json(r, 3);                      // the top 3 simulated rows and every rejected one
  const auto count = [&json](const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\"status\": \"simulated\""), 3u);
  EXPECT_EQ(count("\"status\": \"invalid\""), 32u);
}

// Varied keys cross with the plan enumeration; a varied plan dimension is fixed instead of enumerated.
TEST(SweepStudy, VariedKeysCrossWithThePlans) {
  SweepOptions o;
  o.vary = {parse_sweep_axis("cluster.gpus=8,16"), parse_sweep_axis("plan.micro_batch_size=1")};
  const std::vector<SweepCandidate> all = enumerate_sweep(small_scenario(), o);
  // Per point: tp {1,2,4,8} x (pp 1: 1 + pp 2: 2 + pp 4: 1) x one micro-batch = 16.
  ASSERT_EQ(all.size(), 32u);
  for (const SweepCandidate& c : all) {
    EXPECT_EQ(c.micro_batch_size, 1);
    EXPECT_EQ(c.gpus, c.point == 0 ? 8 : 16);
    EXPECT_EQ(c.point_values, (std::vector<std::string>{c.point == 0 ? "8" : "16", "1"}));
    EXPECT_EQ(c.overrides.front(), c.point == 0 ? "cluster.gpus=8" : "cluster.gpus=16");
    EXPECT_EQ(candidate_scenario(small_scenario(), c).cluster.gpus, c.gpus);
  }
  // 16 GPUs, mb 1, global batch 8: dp = 16/(tp*pp) must divide 8, so tp*pp >= 2; tp*pp divides 16.
  // Valid (tp,pp): (1,2),(1,4),(2,1),(2,2),(2,4),(4,1),(4,2),(4,4),(8,1),(8,2); interleaving at pp 2
  // needs 8/dp = tp*pp/2 micro-batches even: tp*pp = 4, 8 -> (2,2),(4,2),(8,2) . 10 + 3 = 13.
  const auto valid_at_16 = std::count_if(all.begin(), all.end(), [](const SweepCandidate& c) {
    return c.point == 1 && c.status == SweepStatus::kSimulated;
  });
  EXPECT_EQ(valid_at_16, 13);
}

}  // namespace
}  // namespace megasim::scenarios
