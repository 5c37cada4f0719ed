#include "scenarios/studies/plan_study.h"

#include <gtest/gtest.h>

#include "scenarios/config/loader.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

// The default scenario: 175B on 1,024 GPUs with TP=8, PP=8, 2 layers per virtual stage.
TEST(PlanStudy, DerivedSizesOfTheDefaultPlan) {
  const PlanReport r = run_plan_study(Scenario{});
  EXPECT_EQ(r.plan.dp, 1024 / (8 * 8));                // 16
  EXPECT_EQ(r.plan.virtual_stages, 96 / 8 / 2);        // 12 layers per stage in chunks of 2: 6
  EXPECT_EQ(r.plan.num_microbatches, 768 / (1 * 16));  // 48
  EXPECT_EQ(r.tokens_per_iteration, 768 * 2048);
  EXPECT_EQ(r.memory.stages.size(), 8u);
  EXPECT_TRUE(r.fits);
  // Model FLOPs: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) with the padded vocabulary (Korthikanti 2022).
  const double B = 768, s = 2048, l = 96, h = 12288, V = 64512;
  const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(r.model_flops_per_iteration, expected, 1e-9 * expected);
  EXPECT_GT(r.hardware_flops_per_iteration, r.model_flops_per_iteration);  // selective recompute
}

// Without sequence parallelism, recompute or the distributed optimizer, 175B at TP=8 PP=8 on 256 GPUs
// needs 18 bytes per parameter for the ~2.7 B parameters of a stage (49 GB) before any activation,
// and the first stage keeps 8 micro-batches of 12 layers of s*b*h*(10 + 24/t + 5as/(ht)) bytes
// each (about 34 GB more): it cannot fit in 80 GB.
TEST(PlanStudy, PlanThatDoesNotFitIsReportedAsSuch) {
  Scenario s;
  s.cluster.gpus = 256;
  s.plan.num_layers_per_virtual_pipeline_stage = 0;
  s.plan.sequence_parallel = false;
  s.plan.use_distributed_optimizer = false;
  s.plan.recompute_granularity = models::RecomputeGranularity::kNone;
  const PlanReport r = run_plan_study(s);
  EXPECT_FALSE(r.fits);
  EXPECT_GT(static_cast<double>(r.memory.peak().total_bytes()), r.hbm_bytes);
  EXPECT_EQ(r.memory.peak_stage(), 0);
}

TEST(PlanStudy, ImpossiblePlansNameTheKey) {
  const auto key_of = [](Scenario s) {
    try {
      run_plan_study(s);
    } catch (const sim::ConfigError& e) {
      return e.key();
    }
    return std::string("(no error)");
  };
  Scenario s;
  s.plan.tensor_model_parallel_size = 3;
  EXPECT_EQ(key_of(s), "plan.tensor_model_parallel_size");
  s = Scenario{};
  s.plan.global_batch_size = 100;  // not divisible by micro-batch x DP = 16
  EXPECT_EQ(key_of(s), "plan.global_batch_size");
  s = Scenario{};
  s.plan.num_layers_per_virtual_pipeline_stage = 5;  // does not divide 12 layers per stage
  EXPECT_EQ(key_of(s), "plan.num_layers_per_virtual_pipeline_stage");
  s = Scenario{};
  s.gpu = "V100";
  EXPECT_EQ(key_of(s), "cluster.gpu");
}

TEST(PlanStudy, GpuChoiceSetsNvlinkAndMemory) {
  Scenario s = load_scenario_text("[cluster]\ngpu = \"H200\"\n");
  EXPECT_EQ(s.gpu, "H200-SXM-141GB");
  EXPECT_DOUBLE_EQ(effective_cluster(s).nvlink_gbytes_per_s, 900.0 / 2);  // gpus.csv total / 2
  EXPECT_DOUBLE_EQ(run_plan_study(s).hbm_bytes, 141.0 * (1 << 30));       // 141 GiB
  s.cluster.nvlink_gbytes_per_s = 200;                                    // an explicit value wins
  EXPECT_DOUBLE_EQ(effective_cluster(s).nvlink_gbytes_per_s, 200.0);
}

TEST(PlanStudy, JsonHasThePlanAndMemoryKeys) {
  const std::string json = to_json(run_plan_study(Scenario{}));
  for (const char* key : {"\"plan\"", "\"tp\": 8", "\"pp\": 8", "\"dp\": 16", "\"vpp\": 6", "\"memory\"",
                          "\"fits\": true", "\"flop_convention\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace megasim::scenarios
