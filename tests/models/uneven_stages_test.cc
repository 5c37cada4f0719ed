// Pipeline stages of unequal depth (decoder_first/last_pipeline_num_layers, Megatron-LM's
// get_num_layers_to_build): the split, its validation, and what follows from it by hand: the
// stages' parameters, their activations and the layers each stage's program runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "models/memory.h"
#include "models/plan.h"
#include "models/workload.h"
#include "models_test_util.h"
#include "sim/error.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::plan_error_key;

ParallelPlan uneven(const ModelSpec& m, std::int64_t pp, std::int64_t first, std::int64_t last,
                    std::int64_t per_chunk = 0, std::int64_t global = 64) {
  ParallelPlan p = testing::plan_of(m, 1, pp, 0, 1, global);
  p.decoder_first_pipeline_num_layers = first;
  p.decoder_last_pipeline_num_layers = last;
  p.num_layers_per_virtual_pipeline_stage = per_chunk;
  return p;
}

std::int64_t layers_summed(const ResolvedPlan& r) {
  std::int64_t sum = 0;
  for (std::int64_t k = 0; k < r.pp; ++k) sum += r.stage_layers(k);
  return sum;
}

TEST(UnevenStages, Llama3KeepsOneLayerLessOnTheFirstAndLastStage) {
  // modern_setup.md: 126 layers over PP 16, one layer less on the first and last stages.
  const ModelSpec m = testing::gpt(126, 16384, 128, 128000, 8192);
  const ResolvedPlan r = resolve_plan(m, uneven(m, 16, 7, 7), 16, 8);
  EXPECT_TRUE(r.uneven_stages());
  EXPECT_EQ(r.layers_per_stage, 8);  // (126 - 7 - 7) / 14
  EXPECT_EQ(r.stage_layers(0), 7);
  EXPECT_EQ(r.stage_layers(1), 8);
  EXPECT_EQ(r.stage_layers(14), 8);
  EXPECT_EQ(r.stage_layers(15), 7);
  EXPECT_EQ(layers_summed(r), 126);
}

TEST(UnevenStages, OneStageSetApartLeavesTheRestEven) {
  const ModelSpec m = testing::gpt(61, 1024, 16);
  const ResolvedPlan first = resolve_plan(m, uneven(m, 16, 1, 0), 16, 8);  // 60 over 15 stages
  EXPECT_EQ(first.stage_layers(0), 1);
  EXPECT_EQ(first.layers_per_stage, 4);
  EXPECT_EQ(first.stage_layers(15), 4);
  EXPECT_EQ(layers_summed(first), 61);
  const ResolvedPlan last = resolve_plan(m, uneven(m, 4, 0, 13), 4, 8);  // 48 over 3 stages
  EXPECT_EQ(last.stage_layers(0), 16);
  EXPECT_EQ(last.stage_layers(3), 13);
  EXPECT_EQ(layers_summed(last), 61);
  // Two stages, both set: they hold every layer.
  const ResolvedPlan two = resolve_plan(m, uneven(m, 2, 30, 31), 2, 8);
  EXPECT_EQ(two.stage_layers(0), 30);
  EXPECT_EQ(two.stage_layers(1), 31);
}

TEST(UnevenStages, AnEvenSplitIsNotUneven) {
  const ModelSpec m = testing::gpt(32, 1024, 16);
  const ResolvedPlan r = resolve_plan(m, uneven(m, 4, 8, 8), 4, 8);
  EXPECT_FALSE(r.uneven_stages());
  EXPECT_EQ(r.layers_per_stage, 8);
  const ResolvedPlan none = resolve_plan(m, uneven(m, 4, 0, 0), 4, 8);
  EXPECT_FALSE(none.uneven_stages());
}

TEST(UnevenStages, ImpossibleSplitsNameTheirKey) {
  const ModelSpec m = testing::gpt(126, 1024, 16);
  const std::string first = "plan.decoder_first_pipeline_num_layers";
  const std::string last = "plan.decoder_last_pipeline_num_layers";
  EXPECT_EQ(plan_error_key(m, uneven(m, 16, 6, 7), 16), first);    // 113 layers over 14 stages
  EXPECT_EQ(plan_error_key(m, uneven(m, 16, 0, 5), 16), last);     // 121 over 15
  EXPECT_EQ(plan_error_key(m, uneven(m, 1, 7, 0), 1), first);      // no other stage to set apart
  EXPECT_EQ(plan_error_key(m, uneven(m, 2, 60, 60), 2), first);    // two stages must hold all 126
  EXPECT_EQ(plan_error_key(m, uneven(m, 4, 127, 0), 4), first);    // more than the model has
  EXPECT_EQ(plan_error_key(m, uneven(m, 4, 0, -1), 4), last);      // negative
  EXPECT_EQ(plan_error_key(m, uneven(m, 16, 63, 63), 16), first);  // nothing left for 14 stages
  // Without uneven stages the even split's rule stands.
  EXPECT_EQ(plan_error_key(m, uneven(m, 16, 0, 0), 16), "plan.pipeline_model_parallel_size");
}

TEST(UnevenStages, InterleavingSplitsEveryStageIntoTheSameNumberOfChunks) {
  const ModelSpec m = testing::gpt(40, 1024, 16);
  // Middle stages 14 layers in chunks of 7: v = 2, and the first and last stages' 6 split in 3 + 3.
  const ResolvedPlan r = resolve_plan(m, uneven(m, 4, 6, 6, 7), 4, 8);
  EXPECT_EQ(r.virtual_stages, 2);
  for (std::int64_t chunk = 0; chunk < 2; ++chunk) {
    EXPECT_EQ(r.chunk_layers(0, chunk), 3);
    EXPECT_EQ(r.chunk_layers(1, chunk), 7);
    EXPECT_EQ(r.chunk_layers(3, chunk), 3);
  }
  // Chunks of 2 make v = 7 chunks of a middle stage: 6 layers split neither evenly nor into six
  // chunks of 2 and an outermost one.
  EXPECT_EQ(plan_error_key(m, uneven(m, 4, 6, 6, 2), 4), "plan.num_layers_per_virtual_pipeline_stage");
  // Chunks of 4 do not divide a middle stage's 14.
  EXPECT_EQ(plan_error_key(m, uneven(m, 4, 6, 6, 4), 4), "plan.num_layers_per_virtual_pipeline_stage");
}

// Llama 3 405B's shape: 126 layers on 16 stages, 7 on the first and last, interleaved in chunks of 4
// (v = 2). 7 does not split into 2 equal chunks, so the first stage's outermost chunk (chunk 0, with
// the embedding) holds 3 and its other 4, the last stage's outermost (chunk 1, with the loss) 3.
TEST(UnevenStages, AnOutermostChunkTakesWhatAStageLacks) {
  const ModelSpec m = testing::gpt(126, 2048, 16, 32000);
  ParallelPlan p = uneven(m, 16, 7, 7, 4, 32);
  const ResolvedPlan r = resolve_plan(m, p, 16, 8);
  ASSERT_EQ(r.virtual_stages, 2);
  EXPECT_EQ(r.chunk_layers(0, 0), 3);
  EXPECT_EQ(r.chunk_layers(0, 1), 4);
  EXPECT_EQ(r.chunk_layers(7, 0), 4);
  EXPECT_EQ(r.chunk_layers(7, 1), 4);
  EXPECT_EQ(r.chunk_layers(15, 0), 4);
  EXPECT_EQ(r.chunk_layers(15, 1), 3);
  EXPECT_EQ(outermost_chunk_layers(7, 2, 4), 3);
  EXPECT_EQ(outermost_chunk_layers(8, 2, 4), 4);   // even: Megatron's rule
  EXPECT_EQ(outermost_chunk_layers(3, 2, 4), -1);  // the other chunk takes more than the stage holds
  EXPECT_EQ(outermost_chunk_layers(7, 8, 1), 0);   // Llama 3: the embedding or the loss alone
  // Every chunk's parameters add up to its stage's, and every stage's compute runs its layers.
  const Workload w = build_workload(m, r);
  for (std::int64_t stage = 0; stage < 16; ++stage) {
    EXPECT_EQ(chunk_parameter_count(m, r, stage, 0) + chunk_parameter_count(m, r, stage, 1),
              stage_parameter_count(m, r, stage));
    std::int64_t layer_runs = 0;
    for (const Task& t : w.stages[static_cast<std::size_t>(stage)].tasks) {
      if (t.category != TaskCategory::kForward) continue;
      for (const Task::KernelRun& run : t.runs) {
        if (testing::kernels_of(w, run).name == "chunk forward") layer_runs += run.repeat;
      }
    }
    EXPECT_EQ(layer_runs, r.num_microbatches * r.stage_layers(stage)) << "stage " << stage;
  }
  // A chunk of 5 would leave 7 - 5 = 2 for the outermost chunk: fine; one of 3 makes v = 8/3: no.
  EXPECT_EQ(plan_error_key(m, uneven(m, 16, 7, 7, 3, 32), 16), "plan.num_layers_per_virtual_pipeline_stage");
}

TEST(UnevenStages, StageParametersFollowTheirLayers) {
  const ModelSpec m = testing::gpt(126, 2048, 16, 32000);
  const ResolvedPlan r = resolve_plan(m, uneven(m, 16, 7, 7), 16, 8);
  const std::int64_t per_layer = layer_parameter_count_per_tp_rank(m, 1);
  // A middle stage holds its 8 layers and nothing else.
  EXPECT_EQ(stage_parameter_count(m, r, 5), 8 * per_layer);
  // The first stage: 7 layers, the word embeddings (padded vocabulary x hidden) and the positions.
  EXPECT_EQ(stage_parameter_count(m, r, 0), 7 * per_layer + padded_vocab_size(m, 1) * 2048 + m.seq_length * 2048);
  // The last stage: 7 layers, the final LayerNorm and the tied output copy of the embeddings.
  EXPECT_EQ(stage_parameter_count(m, r, 15), 7 * per_layer + 2 * 2048 + padded_vocab_size(m, 1) * 2048);
}

TEST(UnevenStages, ActivationsScaleWithTheStagesLayers) {
  // Same pipeline depth and micro-batches, so the same in-flight micro-batches per stage: a middle
  // stage's activations are in proportion to its layers (11 against 8).
  const ModelSpec m = testing::gpt(32, 1024, 16, 32000, 1024);
  const ModelSpec m38 = testing::gpt(38, 1024, 16, 32000, 1024);
  const MemoryEstimate even = estimate_memory(m, resolve_plan(m, uneven(m, 4, 0, 0), 4, 8));
  const MemoryEstimate uneven_plan = estimate_memory(m38, resolve_plan(m38, uneven(m38, 4, 8, 8), 4, 8));
  EXPECT_EQ(uneven_plan.stages[1].activations_bytes * 8, even.stages[1].activations_bytes * 11);
  EXPECT_EQ(uneven_plan.stages[2].activations_bytes * 8, even.stages[2].activations_bytes * 11);
}

TEST(UnevenStages, EachStageRunsItsOwnLayers) {
  const ModelSpec m = testing::gpt(30, 512, 8, 1000, 256);
  ParallelPlan p = uneven(m, 4, 6, 6, 0, 8);  // middle stages 9 layers
  const ResolvedPlan r = resolve_plan(m, p, 4, 8);
  const Workload w = build_workload(m, r);
  for (std::int64_t stage = 0; stage < r.pp; ++stage) {
    std::int64_t forward_layers = 0;
    for (const Task& t : w.stages[static_cast<std::size_t>(stage)].tasks) {
      if (t.kind != TaskKind::kCompute || t.category != TaskCategory::kForward) continue;
      for (const Task::KernelRun& run : t.runs) {
        if (testing::kernels_of(w, run).name == "chunk forward") forward_layers += run.repeat;
      }
    }
    EXPECT_EQ(forward_layers, r.stage_layers(stage) * r.num_microbatches) << "stage " << stage;
  }
}

}  // namespace
}  // namespace megasim::models
