// Sharded data parallelism (plan.data_parallel_sharding_strategy, Megatron-FSDP): the bytes each
// rank keeps and the bytes it moves per iteration, derived by hand from the strategy's definition
// (plan.h), and where its per-micro-batch collectives sit in the stage program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/memory.h"
#include "models/workload.h"
#include "models_test_util.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::resolved;
using testing::Shape;
using testing::small_gpt;
using S = DataParallelSharding;

// 2 stages x 3 chunks, dp 4, 4 micro-batches: every chunk has several micro-batches in flight.
constexpr Shape kShape{1, 2, 4, 4, 3, 1};

ResolvedPlan sharded(S strategy, bool reshard = true, bool bf16 = false, bool overlap = true) {
  return resolved(small_gpt(), kShape, [&](ParallelPlan& p) {
    p.use_distributed_optimizer = true;
    p.data_parallel_sharding_strategy = strategy;
    p.reshard_after_forward = reshard;
    p.grad_reduce_in_bf16 = bf16;
    p.overlap_grad_reduce = overlap;
    p.overlap_param_gather = overlap;
    p.batch_p2p_sync = false;
    p.average_loss_per_micro_batch = false;
  });
}

struct DpBytes {
  double reduced = 0, gathered = 0;
  std::int64_t reduces = 0, gathers = 0;
};

DpBytes dp_traffic(const StageProgram& p) {
  DpBytes out;
  for (const Task& t : p.tasks) {
    if (t.kind != TaskKind::kDpCollective) continue;
    if (t.category == TaskCategory::kGradientReduce) {
      out.reduced += t.bytes;
      ++out.reduces;
    } else if (t.category == TaskCategory::kParameterGather) {
      out.gathered += t.bytes;
      ++out.gathers;
    }
  }
  return out;
}

// Model state per rank: P parameters on the stage, U those of its largest FSDP unit (a layer, or the
// embedding the first stage holds), d = 4. Parameters 2 bytes, gradients 4 (2 in bf16), optimizer 12.
TEST(ShardedDataParallel, ModelStateBytesPerRankFollowTheStrategy) {
  const ModelSpec m = small_gpt();
  const std::int64_t layer = layer_parameter_count_per_tp_rank(m, 1);
  for (std::int64_t stage = 0; stage < kShape.pp; ++stage) {
    const ResolvedPlan base = sharded(S::kNoShard);
    const std::int64_t params = stage_parameter_count(m, base, stage);
    const std::int64_t ends = params - base.stage_layers(stage) * layer;
    const std::int64_t shard = (params + 3) / 4;
    const std::int64_t in_use = std::min(params, 2 * std::max(layer, ends));
    const auto state = [&](const ResolvedPlan& plan) {
      return estimate_memory(m, plan).stages.at(static_cast<std::size_t>(stage));
    };
    const std::string where = "stage " + std::to_string(stage);

    for (const S dist : {S::kNoShard, S::kOptim}) {  // the distributed optimizer, ZeRO-1
      const MemoryBreakdown b = state(sharded(dist));
      EXPECT_EQ(b.parameters_bytes, 2 * params) << where;
      EXPECT_EQ(b.gradients_bytes, 4 * params) << where;
      EXPECT_EQ(b.optimizer_bytes, 12 * shard) << where;
    }
    const MemoryBreakdown grads = state(sharded(S::kOptimGrads));
    EXPECT_EQ(grads.parameters_bytes, 2 * params) << where;
    EXPECT_EQ(grads.gradients_bytes, 4 * (shard + in_use)) << where;
    EXPECT_EQ(grads.optimizer_bytes, 12 * shard) << where;
    const MemoryBreakdown all = state(sharded(S::kOptimGradsParams));
    EXPECT_EQ(all.parameters_bytes, 2 * (shard + in_use)) << where;
    EXPECT_EQ(all.gradients_bytes, 4 * (shard + in_use)) << where;
    // Llama 3's variant keeps every gathered layer from forward to backward.
    EXPECT_EQ(state(sharded(S::kOptimGradsParams, false)).parameters_bytes, 2 * (shard + params)) << where;
    EXPECT_EQ(state(sharded(S::kOptimGrads, true, true)).gradients_bytes, 2 * (shard + in_use)) << where;
    EXPECT_EQ(state(sharded(S::kOptim, true, true)).gradients_bytes, 2 * params) << where;
    // Activations do not depend on how the model state is sharded.
    EXPECT_EQ(all.activations_bytes, state(sharded(S::kNoShard)).activations_bytes) << where;
  }
}

// Bytes each rank reduces and gathers in one iteration, m = 4 micro-batches, v = 3 chunks:
// optim: 4P once and 2P once; optim_grads: 4P per micro-batch, 2P once; optim_grads_params: 4P and
// 2 x 2P per micro-batch (2P without reshard_after_forward); bf16 gradients halve the reduction.
TEST(ShardedDataParallel, BytesMovedPerIterationFollowTheStrategy) {
  const ModelSpec m = small_gpt();
  const double micro = static_cast<double>(kShape.m);
  const std::int64_t calls = kShape.m * kShape.v;  // one per micro-batch and chunk
  struct Case {
    S strategy;
    bool reshard, bf16;
    double reduced_per_param, gathered_per_param;
    std::int64_t reduces, gathers;
  };
  const std::vector<Case> cases = {
      {S::kOptim, true, false, 4, 2, kShape.v, kShape.v},
      {S::kOptimGrads, true, false, 4 * micro, 2, calls, kShape.v},
      {S::kOptimGrads, true, true, 2 * micro, 2, calls, kShape.v},
      {S::kOptimGradsParams, true, false, 4 * micro, 4 * micro, calls, 2 * calls},
      {S::kOptimGradsParams, false, false, 4 * micro, 2 * micro, calls, calls},
  };
  for (const Case& c : cases) {
    const ResolvedPlan plan = sharded(c.strategy, c.reshard, c.bf16);
    const Workload w = build_workload(m, plan);
    for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
      const double params = static_cast<double>(stage_parameter_count(m, plan, stage));
      const DpBytes got = dp_traffic(w.stages.at(static_cast<std::size_t>(stage)));
      const std::string where = std::string(to_string(c.strategy)) + (c.reshard ? "" : " kept") +
                                (c.bf16 ? " bf16" : "") + " stage " + std::to_string(stage);
      EXPECT_DOUBLE_EQ(got.reduced, c.reduced_per_param * params) << where;
      EXPECT_DOUBLE_EQ(got.gathered, c.gathered_per_param * params) << where;
      EXPECT_EQ(got.reduces, c.reduces) << where;
      EXPECT_EQ(got.gathers, c.gathers) << where;
    }
  }
}

// With sharded parameters every forward (and, resharding, every backward) waits for a gather of its
// own chunk and micro-batch, issued at the end of the compute two steps before (overlap_param_gather)
// or one step before; with sharded gradients each backward's reduce-scatter depends on it alone, and
// without overlap_grad_reduce the next compute waits for it.
TEST(ShardedDataParallel, PerMicroBatchCollectivesSitWhereTheScheduleNeedsThem) {
  for (const bool overlap : {false, true}) {
    for (const bool reshard : {false, true}) {
      const Workload w = build_workload(small_gpt(), sharded(S::kOptimGradsParams, reshard, false, overlap));
      for (const StageProgram& p : w.stages) {
        std::vector<std::int32_t> computes;
        for (std::int32_t i = 0; i < static_cast<std::int32_t>(p.tasks.size()); ++i) {
          const TaskCategory c = p.tasks[static_cast<std::size_t>(i)].category;
          if (c == TaskCategory::kForward || c == TaskCategory::kBackward) computes.push_back(i);
        }
        const std::size_t lead = overlap ? 2 : 1;
        for (std::size_t k = 0; k < computes.size(); ++k) {
          const Task& compute = p.tasks[static_cast<std::size_t>(computes[k])];
          const bool forward = compute.category == TaskCategory::kForward;
          std::vector<std::int32_t> gathers;
          for (const std::int32_t d : compute.deps) {
            if (p.tasks[static_cast<std::size_t>(d)].category == TaskCategory::kParameterGather) gathers.push_back(d);
          }
          ASSERT_EQ(gathers.size(), forward || reshard ? 1u : 0u) << "compute " << k;
          if (!gathers.empty()) {
            const Task& g = p.tasks[static_cast<std::size_t>(gathers.front())];
            EXPECT_EQ(g.chunk, compute.chunk);
            EXPECT_EQ(g.microbatch, compute.microbatch);
            const std::vector<std::int32_t> issued_after =
                k < lead ? std::vector<std::int32_t>{} : std::vector<std::int32_t>{computes[k - lead]};
            EXPECT_EQ(g.deps, issued_after) << "compute " << k;
          }
          if (forward) continue;
          const auto reduce = std::find_if(p.tasks.begin(), p.tasks.end(), [&](const Task& t) {
            return t.category == TaskCategory::kGradientReduce && t.deps == std::vector<std::int32_t>{computes[k]};
          });
          ASSERT_NE(reduce, p.tasks.end()) << "backward " << k;
          EXPECT_EQ(reduce->microbatch, compute.microbatch);
          if (k + 1 < computes.size()) {
            const auto& next = p.tasks[static_cast<std::size_t>(computes[k + 1])].deps;
            const auto index = static_cast<std::int32_t>(reduce - p.tasks.begin());
            EXPECT_EQ(std::find(next.begin(), next.end(), index) != next.end(), !overlap) << "backward " << k;
          }
        }
      }
    }
  }
}

TEST(ShardedDataParallel, StrategiesNeedTheDistributedOptimizerAndShardedParameters) {
  const ModelSpec m = small_gpt();
  ParallelPlan p = testing::plan_of(m, 1, 1, 0, 1, 4);
  p.data_parallel_sharding_strategy = S::kOptimGrads;
  EXPECT_EQ(testing::plan_error_key(m, p, 4), "plan.data_parallel_sharding_strategy");
  p.use_distributed_optimizer = true;
  EXPECT_EQ(testing::plan_error_key(m, p, 4), "");
  p.reshard_after_forward = false;  // nothing to reshard: the parameters are replicated
  EXPECT_EQ(testing::plan_error_key(m, p, 4), "plan.reshard_after_forward");
  p.data_parallel_sharding_strategy = S::kOptimGradsParams;
  EXPECT_EQ(testing::plan_error_key(m, p, 4), "");
  for (const char* name : {"no_shard", "optim", "optim_grads", "optim_grads_params"}) {
    EXPECT_EQ(to_string(parse_data_parallel_sharding(name)), name);
  }
  try {
    (void)parse_data_parallel_sharding("zero3");
    ADD_FAILURE() << "zero3 was accepted";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.data_parallel_sharding_strategy");
    EXPECT_NE(std::string(e.what()).find("optim_grads_params"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace megasim::models
