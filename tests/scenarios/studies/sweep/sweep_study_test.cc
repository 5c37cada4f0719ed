// The sweep (scenarios/studies/sweep/sweep_study.h): the candidate space against a list derived by
// hand from divisor arithmetic, agreement of every row with a plain run_iteration_study or its
// screen, the screen against the full simulation (equal where replicas cannot collide, a bound
// where they do, the confirmed top equal to the full sweep's), ranking and independence from the
// thread count, memory rejections, and crossing with varied keys.
#include "scenarios/studies/sweep/sweep_study.h"
#include "tests/scenarios/iteration_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"

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

// On today's tunable schedule (a group size set in the base) every interleaved candidate runs
// groups of its own pp and 1F1B ones 0, and the run of each candidate's overrides reproduces it.
// A group of pp accepts exactly the micro-batch counts the 2023 schedule does (multiples of pp),
// so the valid plans are the hand-derived list again.
TEST(SweepStudy, TodaysScheduleSweepsGroupsOfEachPlansDepth) {
  Scenario base = small_scenario();
  base.plan.microbatch_group_size_per_vp_stage = 4;
  std::set<PlanKey> valid;
  for (const SweepCandidate& c : enumerate_sweep(base, {})) {
    const std::string group =
        "plan.microbatch_group_size_per_vp_stage=" + std::to_string(c.layers_per_virtual_stage == 0 ? 0 : c.pp);
    EXPECT_NE(std::find(c.overrides.begin(), c.overrides.end(), group), c.overrides.end()) << group;
    if (c.status == SweepStatus::kSimulated) valid.insert(key_of(c));
  }
  EXPECT_EQ(valid, hand_derived_valid_plans());
}

// With the first and last stages set apart (2 layers each of 14), the depths are those whose other
// stages split the remaining 10 evenly: pp 3 (10), 4 (5 each), 7 (2 each) and 12 (1 each); a chunk
// size must split a middle stage into chunks that also split the ends' 2 layers: 5 at pp 3 (2
// chunks), 1 at pp 7 (2 chunks), none at pp 4 (5 chunks) or 12.
TEST(SweepStudy, UnevenEndsEnumerateTheDepthsTheirSplitAllows) {
  Scenario s = small_scenario();
  apply_overrides(s, {"model.num_layers=14", "plan.decoder_first_pipeline_num_layers=2",
                      "plan.decoder_last_pipeline_num_layers=2"});
  std::set<std::pair<std::int64_t, std::int64_t>> depths;
  for (const SweepCandidate& c : enumerate_sweep(s, {})) depths.insert({c.pp, c.layers_per_virtual_stage});
  const std::set<std::pair<std::int64_t, std::int64_t>> expected{{3, 0}, {3, 5}, {4, 0}, {7, 0}, {7, 1}, {12, 0}};
  EXPECT_EQ(depths, expected);
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

SweepOptions every_plan_in_full() {
  SweepOptions o;
  o.confirm_top = 0;
  return o;
}

Scenario plan_scenario(const Scenario& base, const SweepCandidate& c) {
  Scenario s = base;
  s.plan.tensor_model_parallel_size = c.tp;
  s.plan.pipeline_model_parallel_size = c.pp;
  s.plan.num_layers_per_virtual_pipeline_stage = c.layers_per_virtual_stage;
  s.plan.micro_batch_size = c.micro_batch_size;
  return s;
}

// Each row simulated in full is exactly what `megasim run` of that plan reports, and each screened
// row what its screen reports.
TEST(SweepStudy, EveryRowAgreesWithAPlainIterationSimulation) {
  const Scenario base = small_scenario();
  const SweepReport report = run_sweep_study(base, {}, 2);
  EXPECT_EQ(report.simulated + report.screened, 32u);
  EXPECT_GE(report.simulated, SweepOptions::kDefaultConfirmTop);
  for (const SweepRow& row : report.rows) {
    if (row.candidate.status == SweepStatus::kScreened) {
      const IterationReport screen = screen_iteration_study(plan_scenario(base, row.candidate)).report;
      EXPECT_EQ(row.tokens_per_s, screen.tokens_per_s);
      EXPECT_EQ(row.screen_tokens_per_s, screen.tokens_per_s);
      EXPECT_EQ(row.breakdown.bubble_s, screen.mean.bubble_s);
      continue;
    }
    if (row.candidate.status != SweepStatus::kSimulated) continue;
    const IterationReport plain = run_iteration_study(plan_scenario(base, row.candidate)).report;
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

// Rows of one status run from `first` to `last` in rank order: faster first, ties by key.
void expect_ranked(const std::vector<SweepRow>& rows, std::size_t first, std::size_t last) {
  for (std::size_t i = first + 1; i < last; ++i) {
    const SweepRow& a = rows[i - 1];
    const SweepRow& b = rows[i];
    EXPECT_TRUE(a.tokens_per_s > b.tokens_per_s ||
                (a.tokens_per_s == b.tokens_per_s && key_less(a.candidate, b.candidate)));
  }
}

TEST(SweepStudy, RankedByThroughputThenKeyWhateverTheThreadCount) {
  const Scenario base = small_scenario();
  for (const SweepOptions& options : {SweepOptions{}, every_plan_in_full()}) {
    const SweepReport one = run_sweep_study(base, options, 1);
    const SweepReport four = run_sweep_study(base, options, 4);
    EXPECT_EQ(to_csv(one), to_csv(four));
    EXPECT_EQ(to_json(one), to_json(four));
    EXPECT_EQ(to_text(one), to_text(four));
    // Rows simulated in full, then screened ones, each ranked; then rejected ones in key order.
    const std::size_t screened_from = one.simulated, rejected_from = one.simulated + one.screened;
    expect_ranked(one.rows, 0, screened_from);
    expect_ranked(one.rows, screened_from, rejected_from);
    for (std::size_t i = 0; i < one.rows.size(); ++i) {
      const SweepStatus status = one.rows[i].candidate.status;
      EXPECT_EQ(status == SweepStatus::kSimulated, i < screened_from);
      EXPECT_EQ(status == SweepStatus::kScreened, i >= screened_from && i < rejected_from);
    }
    EXPECT_TRUE(
        std::is_sorted(one.rows.begin() + static_cast<std::ptrdiff_t>(rejected_from), one.rows.end(),
                       [](const SweepRow& a, const SweepRow& b) { return key_less(a.candidate, b.candidate); }));
  }
}

// The path an external executor takes (enumerate, screen each candidate anywhere, in any order, hand
// the confirmation's work out and record it in another order, then make_sweep_report) gives the
// same report as run_sweep_study; so does evaluating every candidate in full against confirm_top 0.
TEST(SweepStudy, RowsEvaluatedElsewhereRankTheSame) {
  const Scenario base = small_scenario();
  std::vector<SweepCandidate> candidates = enumerate_sweep(base, {});
  std::reverse(candidates.begin(), candidates.end());
  std::vector<SweepRow> screened;
  for (const SweepCandidate& c : candidates) screened.push_back(screen_sweep_candidate(base, c));
  SweepConfirmation confirmation(std::move(screened), SweepOptions::kDefaultConfirmTop);
  std::vector<std::size_t> handed_out;  // three at a time, recorded last first
  for (bool more = true; more;) {
    for (std::size_t k = 0; k < 3; ++k) {
      const std::optional<std::size_t> next = confirmation.next();
      more = next.has_value();
      if (!more) break;
      handed_out.push_back(*next);
    }
    for (; !handed_out.empty(); handed_out.pop_back()) {
      confirmation.record(handed_out.back(), evaluate_sweep_candidate(base, confirmation.candidate(handed_out.back())));
    }
  }
  const SweepReport elsewhere = make_sweep_report({}, confirmation.rows());
  const SweepReport here = run_sweep_study(base, {}, 2);
  EXPECT_EQ(to_csv(elsewhere), to_csv(here));
  EXPECT_EQ(elsewhere.invalid, 32u);

  std::vector<SweepRow> full;
  for (const SweepCandidate& c : candidates) full.push_back(evaluate_sweep_candidate(base, c));
  const SweepReport full_elsewhere = make_sweep_report(every_plan_in_full(), std::move(full));
  EXPECT_EQ(to_csv(full_elsewhere), to_csv(run_sweep_study(base, every_plan_in_full(), 2)));
  EXPECT_EQ(full_elsewhere.simulated, 32u);
}

// On one server nothing tells the replicas apart (no ECMP: every flow is on NVLink, each replica on
// its own GPUs), so every plan's screen is its full simulation's iteration exactly.
TEST(SweepStudy, ScreenEqualsTheFullSimulationWhereReplicasCannotCollide) {
  const Scenario base = small_scenario();
  std::size_t accepted = 0;
  for (const SweepCandidate& c : enumerate_sweep(base, {})) {
    if (c.status != SweepStatus::kSimulated) continue;
    ++accepted;
    const SweepRow screen = screen_sweep_candidate(base, c);
    const SweepRow full = evaluate_sweep_candidate(base, c);
    EXPECT_EQ(screen.candidate.status, SweepStatus::kScreened);
    EXPECT_EQ(screen.iteration_time_s, full.iteration_time_s) << c.tp << " " << c.pp << " " << c.micro_batch_size;
    EXPECT_EQ(screen.screen_tokens_per_s, full.tokens_per_s);
  }
  EXPECT_EQ(accepted, 32u);
}

// A 6-layer GPT on 128 GPUs of a three-tier Clos small enough that pipeline transfers cross the
// cores (2 GPUs a server, 2 rails, radix-8 switches): the replicas' transfers collide under ECMP.
Scenario colliding_scenario() {
  return load_scenario_text(R"([cluster]
gpu = "A100"
gpus = 128
gpus_per_server = 2
rails = 2
switch_radix = 8
tor_downlink_split = 2
servers_per_group = 8
[model]
num_layers = 6
hidden_size = 2048
num_attention_heads = 16
seq_length = 2048
[plan]
global_batch_size = 128
sequence_parallel = true
use_distributed_optimizer = true
)");
}

// The confirmation's contract where it matters: on a fabric where ECMP collides the replicas'
// transfers, every plan's screen bounds its full simulation (strictly for some), and the sweep that
// confirms the top 3 ranks exactly the full sweep's top 3, with fewer plans simulated in full.
// The sweep of `base` with every plan in full and the one that confirms the top 3: the confirmed
// one splits the full one's plans into simulated and screened, violates no bound, and ranks the same
// top 3 to the value.
struct Top3AgainstFull {
  SweepReport all;
  SweepReport confirmed;
};
Top3AgainstFull expect_the_confirmed_top3_is_the_full_top3(const Scenario& base) {
  Top3AgainstFull out{run_sweep_study(base, every_plan_in_full(), 2), {}};
  SweepOptions top3;
  top3.confirm_top = 3;
  out.confirmed = run_sweep_study(base, top3, 2);
  const SweepReport& all = out.all;
  const SweepReport& confirmed = out.confirmed;
  EXPECT_GE(all.simulated, 8u);
  EXPECT_EQ(confirmed.simulated + confirmed.screened, all.simulated);
  EXPECT_EQ(confirmed.bound_violations, 0u);
  for (std::size_t i = 0; i < 3 && i < all.rows.size() && i < confirmed.rows.size(); ++i) {
    EXPECT_TRUE(key_of(confirmed.rows[i].candidate) == key_of(all.rows[i].candidate)) << i;
    EXPECT_EQ(confirmed.rows[i].tokens_per_s, all.rows[i].tokens_per_s) << i;
    EXPECT_EQ(confirmed.rows[i].iteration_time_s, all.rows[i].iteration_time_s) << i;
  }
  return out;
}

TEST(SweepStudy, ConfirmedTopIsTheFullSweepsTopWhereEcmpCollides) {
  const Scenario base = colliding_scenario();
  const auto [all, confirmed] = expect_the_confirmed_top3_is_the_full_top3(base);
  ASSERT_GE(confirmed.rows.size(), 3u);
  EXPECT_LT(confirmed.simulated, all.simulated);
  std::size_t strictly = 0;
  for (const SweepRow& row : all.rows) {
    if (row.candidate.status != SweepStatus::kSimulated) continue;
    const SweepRow screen = screen_sweep_candidate(base, row.candidate);
    EXPECT_GE(screen.screen_tokens_per_s, row.tokens_per_s * (1 - 1e-12)) << to_string(row.candidate.status);
    strictly += screen.screen_tokens_per_s > row.tokens_per_s * (1 + 1e-6) ? 1 : 0;
  }
  EXPECT_GE(strictly, 1u) << "no plan's transfers collided: the case tests nothing";
  for (const SweepRow& row : confirmed.rows) {
    if (row.candidate.status != SweepStatus::kScreened) continue;
    EXPECT_LT(row.screen_tokens_per_s, confirmed.rows[2].tokens_per_s);
    EXPECT_NE(row.candidate.reason.find("screened: at most"), std::string::npos) << row.candidate.reason;
  }
}

// Under slow hosts (10% of the 64 servers 1.3x slower) the replicas differ only in speed: each plan
// is still screened, one replica at the slowest replica's speeds, which bounds its full simulation,
// and the sweep that confirms the top 3 ranks exactly the full sweep's top 3.
TEST(SweepStudy, UnderSlowHostsTheScreenStillBoundsAndTheConfirmedTopIsTheFullSweepsTop) {
  Scenario base = colliding_scenario();
  base.stragglers.slow_host_fraction = 0.1;
  base.stragglers.slow_host_factor = 1.3;
  const auto [all, confirmed] = expect_the_confirmed_top3_is_the_full_top3(base);
  EXPECT_GT(confirmed.screened, 0u);
  Scenario ideal = base;
  ideal.stragglers.enabled = false;
  SweepOptions top3;
  top3.confirm_top = 3;
  const SweepReport healthy = run_sweep_study(ideal, top3, 2);
  EXPECT_LT(all.rows[0].tokens_per_s, healthy.rows[0].tokens_per_s) << "no slow host slowed the best plan";
  for (const SweepRow& row : all.rows) {
    if (row.candidate.status != SweepStatus::kSimulated) continue;
    const SweepRow screen = screen_sweep_candidate(base, row.candidate);
    EXPECT_EQ(screen.candidate.status, SweepStatus::kScreened);
    EXPECT_GE(screen.screen_tokens_per_s, row.tokens_per_s * (1 - 1e-12));
  }
}

// 16 layers of hidden 8192 hold 12 h^2 L = 12.9 G parameters; without the distributed optimizer
// that is 18 bytes each (bf16 weights, fp32 grads, fp32 master + Adam m, v): 232 GB, so any split
// over tp*pp <= 2 GPUs needs more than 116 GB per GPU for model state alone, over the A100's 80 GiB (85.9 GB).
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
      EXPECT_NE(c.reason.find("exceeds the 85.9 GB of HBM"), std::string::npos) << c.reason;
    } else {
      EXPECT_LE(static_cast<double>(c.peak_memory_bytes), c.hbm_bytes);
    }
  }
  EXPECT_GE(out_of_memory, 3u);  // (1,1), (1,2), (2,1) at least
}

// The report lists rejected plans in the CSV with their reason, and only counts them in the text.
TEST(SweepStudy, CsvHasEveryCandidateAndTextOnlyTheTop) {
  const SweepReport r = run_sweep_study(small_scenario(), every_plan_in_full(), 2);
  const std::string csv = to_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 65);  // header + 64 candidates
  EXPECT_NE(csv.find(",invalid,"), std::string::npos);
  EXPECT_NE(csv.find("rank,gpus,tp,pp,dp,"), std::string::npos);
  EXPECT_NE(csv.find(",screen_tokens_per_s,reason\n"), std::string::npos);
  const std::string text = to_text(r, 3);
  EXPECT_NE(text.find("64 candidate plans: 32 simulated in full, 0 screened, 0 do not fit in memory, 32 invalid"),
            std::string::npos)
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
