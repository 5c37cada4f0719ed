// The simulated iteration under each data_parallel_sharding_strategy: each step of sharding adds
// data-parallel traffic per micro-batch (sharded_dp_test.cc counts it), so on a fabric where that
// traffic cannot hide behind compute the iteration grows with it, and the extra time is exposed
// data-parallel communication.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

// A 1.3B-class GPT on 4 servers of 8 A100s, TP 1 x PP 2 x DP 16, 8 micro-batches per replica: the
// data-parallel groups span the servers.
IterationReport run(const std::string& strategy, bool reshard = true, bool bf16 = false) {
  return run_iteration_study(load_scenario_text(R"([cluster]
gpu = "A100"
gpus = 32
[model]
num_layers = 16
hidden_size = 2048
num_attention_heads = 16
seq_length = 1024
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 2
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 128
use_distributed_optimizer = true
overlap_grad_reduce = true
overlap_param_gather = true
data_parallel_sharding_strategy = ")" + strategy +
                                                "\"\nreshard_after_forward = " + (reshard ? "true" : "false") +
                                                "\ngrad_reduce_in_bf16 = " + (bf16 ? "true" : "false") + "\n"))
      .report;
}

TEST(ShardedDataParallelStudy, MoreShardingMovesMoreBytesAndTakesLonger) {
  const IterationReport optim = run("optim");
  const IterationReport grads = run("optim_grads");
  const IterationReport params = run("optim_grads_params");
  const IterationReport kept = run("optim_grads_params", false);
  EXPECT_LT(optim.iteration_time_s, grads.iteration_time_s);
  EXPECT_LT(grads.iteration_time_s, params.iteration_time_s);
  // Keeping the gathered parameters for the backward saves one gather per micro-batch.
  EXPECT_LT(kept.iteration_time_s, params.iteration_time_s);
  // bf16 gradients halve every per-micro-batch reduce-scatter.
  EXPECT_LT(run("optim_grads", true, true).iteration_time_s, grads.iteration_time_s);
  // The added time is data-parallel communication the compute could not hide.
  EXPECT_LT(optim.mean.dp_exposed_s, grads.mean.dp_exposed_s);
  EXPECT_LT(grads.mean.dp_exposed_s, params.mean.dp_exposed_s);
}

TEST(ShardedDataParallelStudy, OptimIsTheDistributedOptimizer) {
  const IterationReport optim = run("optim");
  const IterationReport none = run("no_shard");
  EXPECT_EQ(optim.iteration_time_s, none.iteration_time_s);
  EXPECT_EQ(optim.memory->peak().total_bytes(), none.memory->peak().total_bytes());
}

}  // namespace
}  // namespace megasim::scenarios
