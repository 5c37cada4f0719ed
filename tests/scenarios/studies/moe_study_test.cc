// The simulated iteration of an MoE plan: the alltoall dispatcher's exposed time is its all-to-alls'
// closed form inside a server, an expert group that spans servers costs more, a skewed router slows
// the iteration, and the experts' gradients go over the expert-data-parallel group.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "known_nvlink_cluster.h"
#include "models/layer_ops.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/sweep/sweep_study.h"

namespace megasim::scenarios {
namespace {

// A small MoE on servers of 8 A100s (NVLink 300 GB/s each way at efficiency 0.8), TP 1, PP 1:
// 4 layers of 16 experts, top-2, 1 micro-batch of 1,024 tokens per replica.
std::string moe_scenario(std::int64_t gpus, std::int64_t ep, double skew, bool distributed_optimizer = false) {
  return testing::known_nvlink_cluster(gpus) + R"([model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
vocab_size = 32000
activation = "swiglu"
ffn_hidden_size = 2048
hidden_dropout = 0
num_experts = 16
moe_router_topk = 2
moe_router_load_skew = )" +
         std::to_string(skew) + R"(
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 1
num_layers_per_virtual_pipeline_stage = 0
expert_model_parallel_size = )" +
         std::to_string(ep) + R"(
moe_token_dispatcher_type = "alltoall"
moe_grouped_gemm = true
micro_batch_size = 1
global_batch_size = )" +
         std::to_string(gpus) + R"(
use_distributed_optimizer = )" +
         (distributed_optimizer ? "true" : "false") + R"(
use_flash_attention = true
async_data_loading = true
batch_p2p_sync = false
average_loss_per_micro_batch = false
)";
}

// Per layer, the forward's dispatch and combine and the backward's two: four all-to-alls of the
// rank's T x k rows x h bf16 (x the load factor) over 8 GPUs of one server, each the fast path's
// base latency + one NVLink step + 7/8 of its bytes at 240 GB/s, none hidden behind compute.
TEST(MoeStudy, DispatchInsideAServerIsExposedAsItsAllToAllFormula) {
  const RunResult run = run_iteration_study(load_scenario_text(moe_scenario(8, 8, 0)));
  const double load = models::expert_load_factor(run.workload.model, run.workload.plan);
  const double bytes = 1024.0 * 2 * 1024 * 2 * load;
  const double one = 10e-6 + 1e-6 + 7.0 / 8 * bytes / 240e9;
  const double expected = 4 * 4 * one;
  EXPECT_NEAR(run.report.mean.tp_exposed_s, expected, 1e-6 * 16 + 1e-9);
}

// EP 16 on 16 GPUs: the expert group spans two servers and half of each dispatch crosses the NICs.
// (The iterations differ otherwise too: EP 8 leaves expert DP 2, whose gradients EP 16 need not
// reduce, so only the dispatch time compares.)
TEST(MoeStudy, AnExpertGroupAcrossServersExposesMore) {
  const IterationReport inside = run_iteration_study(load_scenario_text(moe_scenario(16, 8, 0))).report;
  const IterationReport across = run_iteration_study(load_scenario_text(moe_scenario(16, 16, 0))).report;
  EXPECT_GT(across.mean.tp_exposed_s, 2 * inside.mean.tp_exposed_s);
}

TEST(MoeStudy, ASkewedRouterSlowsTheIteration) {
  double previous = 0;
  for (const double skew : {0.0, 0.3, 1.0}) {
    const double t = run_iteration_study(load_scenario_text(moe_scenario(8, 8, skew))).report.iteration_time_s;
    EXPECT_GT(t, previous) << skew;
    previous = t;
  }
}

// The experts' gradients are reduced over expert DP: with EP 8 on 8 GPUs each expert lives on one
// rank (expert DP 1, nothing to reduce); with EP 1 every rank holds all 16 experts and their
// gradients cross the 8-rank group, which the DP tail exposes (no overlap).
TEST(MoeStudy, ExpertGradientsGoOverTheExpertDataParallelGroup) {
  const IterationReport ep8 = run_iteration_study(load_scenario_text(moe_scenario(8, 8, 0, true))).report;
  const IterationReport ep1 = run_iteration_study(load_scenario_text(moe_scenario(8, 1, 0, true))).report;
  EXPECT_GT(ep1.mean.dp_exposed_s, 2 * ep8.mean.dp_exposed_s);
  EXPECT_GT(ep8.mean.dp_exposed_s, 0);  // the dense part is still reduced over DP 8
}

TEST(MoeStudy, SameInputsGiveTheSameIteration) {
  const double a = run_iteration_study(load_scenario_text(moe_scenario(16, 16, 0.5))).report.iteration_time_s;
  const double b = run_iteration_study(load_scenario_text(moe_scenario(16, 16, 0.5))).report.iteration_time_s;
  EXPECT_EQ(a, b);
}

// A sweep of an MoE model searches expert parallelism too: every divisor of the 16 experts, each
// plan with it validated (EP 16 on 8 GPUs is refused by name) and the rest simulated.
TEST(MoeStudy, SweepSearchesExpertParallelism) {
  const Scenario base = load_scenario_text(moe_scenario(8, 8, 0));
  const SweepOptions options = with_searched_parallelism(base, SweepOptions{});
  ASSERT_EQ(options.vary.size(), 1U);
  EXPECT_EQ(options.vary[0].key, "plan.expert_model_parallel_size");
  EXPECT_EQ(options.vary[0].values, (std::vector<std::string>{"1", "2", "4", "8"}));  // at most 8 GPUs
  SweepOptions some;
  some.max_micro_batch_size = 1;
  const SweepReport report = run_sweep_study(base, some, 1, {});
  std::set<std::string> simulated;
  for (const SweepRow& row : report.rows) {
    ASSERT_EQ(row.candidate.point_values.size(), 1U);
    if (row.candidate.status == SweepStatus::kSimulated) simulated.insert(row.candidate.point_values[0]);
  }
  EXPECT_EQ(simulated, (std::set<std::string>{"1", "2", "4", "8"}));
  // A dense model's sweep is unchanged.
  Scenario dense = base;
  dense.model.num_experts = 0;
  dense.plan.expert_model_parallel_size = 1;
  EXPECT_TRUE(with_searched_parallelism(dense, SweepOptions{}).vary.empty());
}

}  // namespace
}  // namespace megasim::scenarios
