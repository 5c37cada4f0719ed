// The simulated iteration with the tunable interleaved schedule (microbatch_group_size_per_vp_stage)
// and Llama 3's layout of an embedding-only first chunk and a loss-only last chunk: every
// combination of group size and p2p overlap runs to the end, a group of pp is the 2023 schedule,
// and the memory follows the held chunks.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

// A GPT on one server of 8 A100s, PP 4 x DP 2: 4 + 4 + 4 + 4 layers in 4 chunks of one, or with
// `ends` = 3 Llama 3's 3 + 4 + 4 + 3, whose outermost chunks hold the embedding or the loss alone.
Scenario grouped(std::int64_t ends, std::int64_t batch, std::int64_t group, bool overlap) {
  return load_scenario_text(R"([cluster]
gpu = "A100"
gpus = 8
[model]
num_layers = )" + std::to_string(ends == 0 ? 16 : 8 + 2 * ends) +
                            R"(
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
hidden_dropout = 0
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 4
num_layers_per_virtual_pipeline_stage = 1
micro_batch_size = 1
decoder_first_pipeline_num_layers = )" +
                            std::to_string(ends) + "\ndecoder_last_pipeline_num_layers = " + std::to_string(ends) +
                            "\nglobal_batch_size = " + std::to_string(batch) +
                            "\nmicrobatch_group_size_per_vp_stage = " + std::to_string(group) +
                            "\noverlap_p2p_comm = " + (overlap ? "true" : "false") + "\n");
}

double iteration_s(const Scenario& s) {
  return run_iteration_study(s).report.iteration_time_s;
}

// m = 4, 8, 12 micro-batches per replica (batch 8, 16, 24 over DP 2); groups from pp = 4 to m with
// a last group of 0 or >= pp; blocking and overlapped p2p; even and Llama-style ends.
TEST(GroupedScheduleStudy, EveryGroupAndOverlapRunsToTheEnd) {
  for (const std::int64_t ends : {0, 3}) {
    for (const auto& [batch, group] :
         {std::pair{8, 4}, std::pair{16, 4}, std::pair{16, 8}, std::pair{24, 8}, std::pair{24, 12}, std::pair{24, 4}}) {
      for (const bool overlap : {false, true}) {
        SCOPED_TRACE("ends " + std::to_string(ends) + " batch " + std::to_string(batch) + " N " +
                     std::to_string(group) + (overlap ? " overlapped" : " blocking"));
        EXPECT_GT(iteration_s(grouped(ends, batch, group, overlap)), 0);
      }
    }
  }
}

// A group of pp is the 2023 schedule whenever m is not pp (the same order, so the same iteration to
// the nanosecond); with m == pp the 2023 schedule runs every forward first and the grouped one does
// not on the later ranks, so the two differ.
TEST(GroupedScheduleStudy, AGroupOfPpIsThe2023ScheduleUnlessMEqualsPp) {
  for (const bool overlap : {false, true}) {
    EXPECT_EQ(iteration_s(grouped(3, 16, 4, overlap)), iteration_s(grouped(3, 16, 0, overlap)));
    EXPECT_EQ(iteration_s(grouped(0, 24, 4, overlap)), iteration_s(grouped(0, 24, 0, overlap)));
  }
  EXPECT_NE(iteration_s(grouped(0, 8, 4, true)), iteration_s(grouped(0, 8, 0, true)));
}

// Llama 3's layout: the first stage's chunk 0 holds the embedding and no layer, the last stage's
// chunk 3 the loss and no layer; 3 + 4 + 4 + 3 layers in all.
TEST(GroupedScheduleStudy, LlamaLayoutKeepsTheEmbeddingAndTheLossAlone) {
  const PlanReport r = run_plan_study(grouped(3, 16, 4, true));
  EXPECT_EQ(r.plan.virtual_stages, 4);
  EXPECT_EQ(r.plan.chunk_layers(0, 0), 0);
  EXPECT_EQ(r.plan.chunk_layers(0, 1), 1);
  EXPECT_EQ(r.plan.chunk_layers(3, 3), 0);
  EXPECT_EQ(r.plan.chunk_first_layer(1, 0), 0);   // virtual stage 1 holds layer 0
  EXPECT_EQ(r.plan.chunk_first_layer(3, 3), 14);  // after all 14 layers
  // The first stage holds no layer activations for the chunk-0 forwards it keeps: lighter than a
  // middle stage, although it holds the most forwards.
  EXPECT_LT(r.memory.stages[0].activations_bytes, r.memory.stages[1].activations_bytes);
  // The reports name the group; a plan on the 2023 schedule reads as before.
  EXPECT_NE(to_text(r).find("4 virtual stages per rank (groups of 4 micro-batches)"), std::string::npos) << to_text(r);
  EXPECT_NE(to_json(r).find(R"("microbatch_group_size_per_vp_stage": 4)"), std::string::npos);
  const PlanReport old = run_plan_study(grouped(3, 16, 0, true));
  EXPECT_EQ(to_text(old).find("groups of"), std::string::npos);
  EXPECT_EQ(to_json(old).find("microbatch_group_size_per_vp_stage"), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
