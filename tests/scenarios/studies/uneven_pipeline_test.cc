// The simulated iteration of a pipeline whose first and last stages hold fewer layers
// (decoder_first/last_pipeline_num_layers): bracketed by the even pipelines around it, and reported
// with its split.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

// A GPT of `layers` layers on one server of 8 A100s, PP 4 x DP 2, 16 micro-batches per replica.
Scenario pipeline(std::int64_t layers, std::int64_t first, std::int64_t last) {
  return load_scenario_text(R"([cluster]
gpu = "A100"
gpus = 8
[model]
num_layers = )" + std::to_string(layers) +
                            R"(
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 4
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 32
decoder_first_pipeline_num_layers = )" +
                            std::to_string(first) + "\ndecoder_last_pipeline_num_layers = " + std::to_string(last) +
                            "\n");
}

double iteration_s(const Scenario& s) {
  return run_iteration_study(s).report.iteration_time_s;
}

// 3 + 4 + 4 + 3 layers against 4 x 4 and 3 x 3: the bottleneck stage is the even 4-layer one's,
// and the lighter ends shorten the pipeline's fill and drain, so the time lies strictly between.
TEST(UnevenPipeline, LighterEndsLieBetweenTheEvenPipelines) {
  const double four = iteration_s(pipeline(16, 0, 0));
  const double uneven = iteration_s(pipeline(14, 3, 3));
  const double three = iteration_s(pipeline(12, 0, 0));
  EXPECT_LT(uneven, four);
  EXPECT_GT(uneven, three);
  // The 4-layer middle stages run all 16 micro-batches in both: the even pipeline's 1F1B takes
  // about m + pp - 1 = 19 of those micro-batch slots, the uneven one at least the 16 themselves.
  EXPECT_GT(uneven, four * 16.0 / 19.0);
}

TEST(UnevenPipeline, ThePlanReportsItsSplit) {
  const PlanReport r = run_plan_study(pipeline(14, 3, 3));
  EXPECT_EQ(r.plan.layers_per_stage, 4);
  EXPECT_EQ(r.plan.first_stage_layers, 3);
  EXPECT_EQ(r.plan.last_stage_layers, 3);
  EXPECT_NE(to_text(r).find("4 layers per stage (3 on the first, 3 on the last)"), std::string::npos) << to_text(r);
  const std::string json = to_json(r);
  EXPECT_NE(json.find(R"("first_stage_layers": 3)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("last_stage_layers": 3)"), std::string::npos) << json;
  // An even plan's report has no such fields (the reports of even plans are unchanged).
  EXPECT_EQ(to_json(run_plan_study(pipeline(16, 4, 4))).find("first_stage_layers"), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
