// The shipped Llama 3 405B scenarios (scenarios/llama3/) state the published configuration
// (../shared/calibration/modern_setup.md) and run: the same 16M-token batch on 8,192 and 16,384
// H100s, so the larger cluster halves each pipeline's micro-batches and its bubble share grows.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "models/plan.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

Scenario llama3(const std::string& name) {
  return load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/llama3/" + name + ".toml");
}

TEST(Llama3Scenarios, StateThePublishedConfiguration) {
  for (const auto& [name, gpus, dp] : {std::tuple{"405b_8k", 8192, 64}, std::tuple{"405b_16k", 16384, 128}}) {
    SCOPED_TRACE(name);
    const Scenario s = llama3(name);
    EXPECT_EQ(s.gpu, "H100-SXM-80GB");
    EXPECT_EQ(s.cluster.gpus, gpus);
    EXPECT_DOUBLE_EQ(s.cluster.nic_gbps, 400);
    EXPECT_EQ(s.cluster.gpus_per_server * s.cluster.servers_per_group, 16);  // two servers per ToR
    EXPECT_EQ(s.fabric.qps_per_connection, 16);                              // 16 flows per GPU pair
    EXPECT_TRUE(s.stragglers.active());                                      // the production profile
    EXPECT_EQ(s.model.num_layers, 126);
    EXPECT_EQ(s.model.hidden_size, 16384);
    EXPECT_EQ(s.model.ffn_hidden_size, 53248);
    EXPECT_EQ(s.model.num_attention_heads, 128);
    EXPECT_EQ(s.model.num_query_groups, 8);
    EXPECT_EQ(s.model.seq_length, 8192);
    EXPECT_EQ(s.model.hidden_dropout, 0.0);
    const models::ParallelPlan& p = s.plan;
    EXPECT_EQ(p.tensor_model_parallel_size, 8);
    EXPECT_EQ(p.pipeline_model_parallel_size, 16);
    EXPECT_EQ(p.decoder_first_pipeline_num_layers, 7);
    EXPECT_EQ(p.decoder_last_pipeline_num_layers, 7);
    // Llama 3's interleaved layout: one-layer chunks, the embedding and the loss alone in the
    // outermost ones, groups of pp micro-batches, asynchronous p2p.
    EXPECT_EQ(p.num_layers_per_virtual_pipeline_stage, 1);
    EXPECT_EQ(p.microbatch_group_size_per_vp_stage, 16);
    EXPECT_TRUE(p.overlap_p2p_comm);
    // Only the norms recomputed (the scenario says why): no matmul is repeated.
    EXPECT_EQ(p.recompute_granularity, models::RecomputeGranularity::kSelective);
    EXPECT_EQ(models::to_string_recompute_modules(p.recompute_modules), "layernorm");
    EXPECT_EQ(p.global_batch_size * s.model.seq_length, std::int64_t{16} << 20);  // 16M tokens
    // Resolved and sized only (the next test simulates both).
    const PlanReport plan = run_plan_study(s);
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.plan.dp, dp);
    EXPECT_EQ(plan.plan.num_microbatches, 2048 / dp);
    EXPECT_EQ(plan.plan.virtual_stages, 8);
    EXPECT_EQ(plan.plan.chunk_layers(0, 0), 0);
    EXPECT_EQ(plan.plan.chunk_layers(15, 7), 0);
    EXPECT_DOUBLE_EQ(plan.hardware_flops_per_iteration, plan.model_flops_per_iteration);
  }
}

// Each replica's pipeline runs m = 32 or 16 micro-batches through 16 stages of 8 chunks: the
// interleaved bubble is about (pp - 1) / (v m) of the compute, 15/256 against 15/128, the same
// absolute time on half the work, so the bubble's share grows and the per-GPU throughput falls,
// although each GPU computes half as much.
// The iterations alone, without the production profile's straggler what-ifs (four more runs each).
TEST(Llama3Scenarios, TwiceTheGpusForTheSameBatchGrowTheBubbleShare) {
  RunOptions options;
  options.straggler_whatifs = false;
  const IterationReport small = run_iteration_study(llama3("405b_8k"), options).report;
  const IterationReport large = run_iteration_study(llama3("405b_16k"), options).report;
  EXPECT_LT(large.iteration_time_s, small.iteration_time_s);
  EXPECT_LT(large.mfu, small.mfu);
  EXPECT_GT(large.mean.bubble_s / large.iteration_time_s, small.mean.bubble_s / small.iteration_time_s);
  // Compute per GPU halves (half the micro-batches, the same per micro-batch), to rounding.
  EXPECT_NEAR(large.mean.compute_s, small.mean.compute_s / 2, 0.01 * small.mean.compute_s);
}

}  // namespace
}  // namespace megasim::scenarios
