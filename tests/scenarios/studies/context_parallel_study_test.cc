// The simulated iteration with context parallelism inside one server: all_gather's exposed time is
// its all-gathers' and reduce-scatters' ring formula over NVLink; p2p moves the same bytes but hides
// them behind the attention blocks; the shipped 128K-token Llama 3 run resolves as published and fits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "known_nvlink_cluster.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/sweep/sweep_study.h"

namespace megasim::scenarios {
namespace {

// A GQA model on one server of 8 A100s (NVLink 300 GB/s each way at efficiency 0.8), TP 1 x CP 8:
// 4 layers, 8 groups of 64 channels, 16K tokens per sequence, one sequence per iteration.
std::string cp_scenario(const std::string& type) {
  return testing::known_nvlink_cluster(8) + R"([model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
num_query_groups = 8
seq_length = 16384
vocab_size = 32000
hidden_dropout = 0
position_embedding_type = "rope"
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 1
num_layers_per_virtual_pipeline_stage = 0
context_parallel_size = 8
cp_comm_type = ")" +
         type +
         R"("
micro_batch_size = 1
global_batch_size = 1
use_flash_attention = true
async_data_loading = true
batch_p2p_sync = false
average_loss_per_micro_batch = false
)";
}

// Per layer: the forward's all-gather of K and V and the backward's all-gather and reduce-scatter,
// each of S = 8 x 2 x 2,048 tokens x 8 x 64 x 2 bytes over a ring of 8 inside the server: base
// latency + 7 NVLink steps + 7/8 x S at 240 GB/s (2 NCCL channels, each on its own lane).
TEST(ContextParallelStudy, AllGatherInsideAServerIsExposedAsItsRingFormula) {
  const IterationReport r = run_iteration_study(load_scenario_text(cp_scenario("all_gather"))).report;
  const double bytes = 8 * 2 * 2048.0 * 8 * 64 * 2;
  const double one = 10e-6 + 7 * 1e-6 + 7.0 / 8 * bytes / 240e9;
  EXPECT_NEAR(r.mean.tp_exposed_s, 4 * 3 * one, 4 * 3 * 1e-9 + 1e-9);
}

TEST(ContextParallelStudy, RingAttentionHidesWhatAllGatherExposes) {
  const IterationReport gather = run_iteration_study(load_scenario_text(cp_scenario("all_gather"))).report;
  const IterationReport ring = run_iteration_study(load_scenario_text(cp_scenario("p2p"))).report;
  EXPECT_LT(ring.mean.tp_exposed_s, gather.mean.tp_exposed_s);
  EXPECT_LT(ring.iteration_time_s, gather.iteration_time_s);
  // The same kernels, to the nanosecond each task duration rounds to.
  EXPECT_NEAR(ring.mean.compute_s, gather.mean.compute_s, 16e-9);
}

TEST(ContextParallelStudy, Llama3LongContextRunResolvesAsPublished) {
  const Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/llama3/405b_16k_cp16.toml");
  EXPECT_EQ(s.model.seq_length, 131072);
  EXPECT_EQ(s.plan.context_parallel_size, 16);
  EXPECT_EQ(s.plan.cp_comm_type, models::CpCommType::kAllGather);
  RunOptions options;
  options.straggler_whatifs = false;  // the iteration alone: its report's plan, memory and MFU
  const RunResult run = run_iteration_study(s, options);
  EXPECT_EQ(run.report.plan.dp, 8);
  EXPECT_EQ(run.report.plan.num_microbatches, 16);  // 16 sequences per DP rank
  ASSERT_TRUE(run.report.memory.has_value());
  EXPECT_LE(static_cast<double>(run.report.memory->peak().total_bytes()), 80 * 1.073741824e9);
  EXPECT_GT(run.report.mfu, 0);
}

// A scenario that uses CP sweeps it too: 1, 2, 4, 8 on 8 GPUs (16,384 tokens split in 2 x cp).
TEST(ContextParallelStudy, SweepSearchesContextParallelism) {
  const SweepOptions options = with_searched_parallelism(load_scenario_text(cp_scenario("p2p")), SweepOptions{});
  ASSERT_EQ(options.vary.size(), 1U);
  EXPECT_EQ(options.vary[0].key, "plan.context_parallel_size");
  EXPECT_EQ(options.vary[0].values, (std::vector<std::string>{"1", "2", "4", "8"}));
}

}  // namespace
}  // namespace megasim::scenarios
