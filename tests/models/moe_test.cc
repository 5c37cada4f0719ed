// Mixture of experts: parameter counts against the published Mixtral size and by conservation over
// the expert-parallel ranks, FLOPs against the per-token formula, the busiest expert rank's load
// against its closed form, the experts' groups, the workload's dispatch traffic and expert-DP
// buckets, memory, and the validation of every MoE key.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "models/flops.h"
#include "models/memory.h"
#include "models/moe.h"
#include "models/stage_parameters.h"
#include "models/workload.h"
#include "models_test_util.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::plan_error_key;

// Mixtral 8x7B (Jiang et al. 2024): 32 layers, hidden 4,096, 32 heads, 8 KV heads, 8 SwiGLU experts
// of 14,336, top-2, vocabulary 32,000, RoPE, untied embeddings.
ModelSpec mixtral() {
  ModelSpec m = testing::llama_style(32, 4096);
  m.untie_embeddings_and_output_weights = true;
  m.num_experts = 8;
  m.moe_router_topk = 2;
  return m;
}

ParallelPlan moe_plan(std::int64_t tp, std::int64_t pp, std::int64_t ep, std::int64_t global) {
  ParallelPlan p;
  p.tensor_model_parallel_size = tp;
  p.pipeline_model_parallel_size = pp;
  p.expert_model_parallel_size = ep;
  p.sequence_parallel = tp > 1;
  p.global_batch_size = global;
  p.moe_token_dispatcher_type = MoeTokenDispatcher::kAlltoall;
  return p;
}

// Mixtral's published 46.7B parameters (12.9B active per token): the experts' 3 h f weights each
// dominate. The model here also counts Megatron's qkv bias and LayerNorm biases (a few million).
TEST(Moe, MixtralHasItsPublishedParameterCount) {
  const ModelSpec m = mixtral();
  EXPECT_NEAR(static_cast<double>(parameter_count(m, 1)), 46.7e9, 0.05e9);
  const std::int64_t h = 4096, f = 14336;
  EXPECT_EQ(expert_parameter_count(m), 3 * h * f);
  EXPECT_EQ(moe_layer_parameter_count(m), attention_parameter_count(m) + 5 * h + 8 * h + 8 * 3 * h * f);
}

// Every parameter lives somewhere: over the stages, a GPU's dense part (TP 1) plus its experts
// times the ep x etp ranks that split them add up to the model (untied, so no extra copy).
TEST(Moe, StageParametersOverTheExpertRanksAddUpToTheModel) {
  ModelSpec m = mixtral();
  m.moe_layer_freq = 2;  // alternate dense and MoE layers: the stages differ
  for (const std::int64_t ep : {1, 2, 8}) {
    const ResolvedPlan plan = resolve_plan(m, moe_plan(1, 4, ep, 64), 64, 8);
    std::int64_t sum = 0;
    for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
      const ParameterCount c = stage_parameters(m, plan, stage);
      sum += c.dense + c.expert * plan.ep * plan.etp;
    }
    EXPECT_EQ(sum, parameter_count(m, 1)) << "ep " << ep;
  }
}

TEST(Moe, LayerFrequencyAndFirstDenseLayersPickTheMoeLayers) {
  ModelSpec m = mixtral();
  m.moe_layer_freq = 3;
  m.moe_first_dense_layers = 4;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    const bool expected = i >= 4 && i % 3 == 0;
    EXPECT_EQ(is_moe_layer(m, i), expected) << i;
    count += expected ? 1 : 0;
  }
  EXPECT_EQ(moe_layers_in(m, 0, m.num_layers), count);
  m.num_experts = 0;
  EXPECT_EQ(moe_layers_in(m, 0, m.num_layers), 0);
}

// Model FLOPs per token and layer: 2 x the attention's weights, 4 s h for the scores and context
// (the full s x s convention), 2 h E for the router and k x 2 x an expert's weights; backward 2x;
// plus the logits 2 h V. Balanced, whatever the skew: the convention counts routed work.
TEST(Moe, ModelFlopsFollowThePerTokenFormula) {
  ModelSpec m = mixtral();
  m.moe_router_load_skew = 0.5;
  const ResolvedPlan plan = resolve_plan(m, moe_plan(2, 2, 4, 64), 64, 8);
  const double h = 4096, s = 4096;
  const double attention_weights = h * (h + 2 * 8 * 128) + h * h;
  const double per_token_layer = 2 * attention_weights + 4 * s * h + 2 * h * 8 + 2 * 2 * 3 * h * 14336;
  const double vocab = static_cast<double>(plan.padded_vocab_size);
  const double tokens = 64 * s;
  const double expected = 3 * tokens * (32 * per_token_layer + 2 * h * vocab);
  EXPECT_NEAR(iteration_flops(m, plan).model, expected, 1e-9 * expected);
}

// The busiest of two ranks, one expert each, with a huge token count (no sampling noise): shares
// w1, w2 log-normal with sigma^2 = ln(1 + cv^2), so the busiest holds 1 / (1 + exp(-sigma |d|)) of
// the tokens, d ~ N(0, 2): its load over the balanced half is E[2 / (1 + exp(-sigma sqrt(2) |Z|))].
TEST(Moe, BusiestRankOfTwoFollowsTheLogNormalShares) {
  ModelSpec m = mixtral();
  m.num_experts = 2;
  m.moe_router_topk = 1;
  for (const double cv : {0.2, 0.5, 1.0}) {
    m.moe_router_load_skew = cv;
    const double sigma = std::sqrt(std::log1p(cv * cv));
    double expected = 0;  // midpoint rule over |Z| in [0, 8], density 2 phi(z)
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const double z = (i + 0.5) * 8.0 / n;
      const double density = 2 * std::exp(-z * z / 2) / std::sqrt(2 * M_PI);
      expected += density * 8.0 / n * 2 / (1 + std::exp(-sigma * std::sqrt(2.0) * z));
    }
    // 256 draws: the Monte Carlo error of the mean is below 2% at these skews.
    EXPECT_NEAR(busiest_expert_rank_load(m, 2, 1e12), expected, 0.02 * expected) << cv;
  }
}

TEST(Moe, BusiestRankLoadIsOneWhenBalancedAndCappedByTheCapacity) {
  ModelSpec m = mixtral();
  EXPECT_NEAR(busiest_expert_rank_load(m, 8, 1e12), 1.0, 1e-4);  // balanced, noise 1e-6
  // Sampling noise alone: 8 ranks of 1,024 tokens each, a standard deviation of about 3%: the
  // busiest of 8 is about 1.4 standard deviations above the mean.
  const double noisy = busiest_expert_rank_load(m, 8, 8192);
  EXPECT_GT(noisy, 1.02);
  EXPECT_LT(noisy, 1.07);
  double previous = 1.0;
  for (const double cv : {0.1, 0.3, 1.0}) {
    m.moe_router_load_skew = cv;
    const double load = busiest_expert_rank_load(m, 8, 1e9);
    EXPECT_GT(load, previous) << cv;
    previous = load;
    // A capacity factor of 1 lets no expert take more than its balanced share.
    m.moe_expert_capacity_factor = 1;
    EXPECT_LE(busiest_expert_rank_load(m, 8, 1e9), 1.0 + 1e-12) << cv;
    m.moe_expert_capacity_factor = 0;
  }
  // One rank holds every expert: it takes every token (dropless).
  EXPECT_NEAR(busiest_expert_rank_load(m, 1, 1e9), 1.0, 1e-9);
}

// A capacity factor below 1 drops what the balanced share exceeds: at 0.5 with a balanced router,
// every expert keeps half of its tokens; the FLOP count leaves the dropped ones out.
TEST(Moe, CapacityDropsAreNeitherComputedNorCounted) {
  ModelSpec m = mixtral();
  m.moe_expert_capacity_factor = 0.5;
  const RouterLoad load = router_load(m, 8, 1e12);
  EXPECT_NEAR(load.kept, 0.5, 1e-6);
  EXPECT_NEAR(load.busiest, 0.5, 1e-6);
  const ResolvedPlan plan = resolve_plan(m, moe_plan(1, 1, 8, 8), 8, 8);
  ModelSpec dropless = m;
  dropless.moe_expert_capacity_factor = 0;
  const double expert_flops = 3.0 * 8 * 4096 * 32 * 2 * 2 * 3 * 4096 * 14336;  // 3 passes, all tokens x k
  EXPECT_NEAR(iteration_flops(dropless, plan).model - iteration_flops(m, plan).model, expert_flops / 2,
              1e-6 * expert_flops);
}

// Megatron's expert layout inside a stage (tp-ep-dp-pp): i = etp + etp * (ep + ep_size * edp).
TEST(Moe, ExpertGroupsFollowMegatronsRankOrder) {
  const ExpertLayout layout{ParallelLayout{2, 2, 8}, 2, 4};  // TP 2 x DP 8 = 16 ranks a stage
  EXPECT_EQ(layout.expert_data(), 2);
  const std::int64_t rank = 16 + 5;  // stage 1, index 5: etp 1, ep 2, edp 0
  EXPECT_EQ(layout.expert_group(rank), (std::vector<std::int64_t>{17, 19, 21, 23}));
  EXPECT_EQ(layout.expert_tensor_group(rank), (std::vector<std::int64_t>{20, 21}));
  EXPECT_EQ(layout.expert_data_group(rank), (std::vector<std::int64_t>{21, 29}));
  EXPECT_EQ(layout.expert_tensor_and_expert_group(rank), (std::vector<std::int64_t>{16, 17, 18, 19, 20, 21, 22, 23}));
}

// The alltoall dispatcher's traffic per MoE layer and micro-batch: dispatch and combine over EP of
// the rank's T x k rows x h bf16 (x the load factor), with expert TP a gather and reduce-scatter of
// the received rows; the experts' gradients reduced over expert DP in their own bucket.
TEST(Moe, WorkloadDispatchesOverTheExpertGroupAndReducesExpertsOverExpertDp) {
  const ModelSpec m = mixtral();
  ParallelPlan p = moe_plan(2, 2, 4, 32);
  p.use_distributed_optimizer = true;
  const ResolvedPlan plan = resolve_plan(m, p, 32, 8);  // DP 8, EP 4 x ETP 2 = 8, expert DP 2
  ASSERT_EQ(plan.edp, 2);
  const Workload w = build_workload(m, plan);
  const KernelList* forward = nullptr;
  for (const KernelList& list : w.kernels) {
    if (list.name == "moe layer forward") forward = &list;
  }
  ASSERT_NE(forward, nullptr);
  const double rows = 4096.0 / 2 * 2 * expert_load_factor(m, plan);  // T = s / tp, k = 2
  int a2a = 0, gathers = 0;
  for (const TpCollective& c : forward->tp_collectives) {
    if (c.group == ComputeGroup::kExpert) {
      EXPECT_EQ(c.op, CollectiveOp::kAllToAll);
      EXPECT_DOUBLE_EQ(c.bytes, rows * 4096 * 2);
      a2a += c.count;
    }
    if (c.group == ComputeGroup::kExpertTensor) {
      EXPECT_DOUBLE_EQ(c.bytes, 2 * rows * 4096 * 2);
      gathers += c.count;
    }
  }
  EXPECT_EQ(a2a, 2);
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(forward->host_syncs, 1);
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    const ParameterCount params = stage_parameters(m, plan, stage);
    double expert_bytes = 0, dense_bytes = 0;
    for (const Task& t : w.stages[static_cast<std::size_t>(stage)].tasks) {
      if (t.kind != TaskKind::kDpCollective || t.category != TaskCategory::kGradientReduce) continue;
      (t.group == DpGroup::kExpertData ? expert_bytes : dense_bytes) += t.bytes;
    }
    EXPECT_DOUBLE_EQ(expert_bytes, 4.0 * static_cast<double>(params.expert)) << stage;
    EXPECT_DOUBLE_EQ(dense_bytes, 4.0 * static_cast<double>(params.dense)) << stage;
  }
}

// overlap_moe_expert_parallel_comm marks the expert all-to-alls overlappable (hidden behind GEMMs
// up to the SMs NCCL holds); only the alltoall dispatcher has them.
TEST(Moe, OverlappedExpertCommunicationIsMarkedOverlappable) {
  const ModelSpec m = mixtral();
  ParallelPlan p = moe_plan(1, 1, 8, 8);
  for (const bool overlap : {false, true}) {
    p.overlap_moe_expert_parallel_comm = overlap;
    const Workload w = build_workload(m, resolve_plan(m, p, 8, 8));
    int expert_calls = 0;
    for (const KernelList& list : w.kernels) {
      for (const TpCollective& c : list.tp_collectives) {
        if (c.group != ComputeGroup::kExpert) continue;
        EXPECT_EQ(c.overlappable, overlap) << list.name;
        ++expert_calls;
      }
    }
    EXPECT_EQ(expert_calls, 2);  // one entry of count 2 in the forward, one in the backward
  }
  p.moe_token_dispatcher_type = MoeTokenDispatcher::kAllgather;
  EXPECT_EQ(plan_error_key(m, p, 8), "plan.overlap_moe_expert_parallel_comm");
}

// The flex (DeepEP) dispatcher sends each token once per other server its experts are on. EP 64
// over 8 servers of 8, top-8: unlimited, a token touches D = 8 (1 - (7/8)^8) = 5.25 servers; with
// node-limited routing to 4 of the 8 groups, D = 4 (1 - (3/4)^8) = 3.60. Of D, (N-1)/N are other
// servers, and the equivalent all-to-all over 64 moves 56/64 of its bytes over the network, so its
// size is T h b D. FP8 dispatch halves b; the combine stays BF16.
TEST(Moe, FlexDispatcherSendsEachTokenOncePerServer) {
  ModelSpec m = mixtral();
  m.num_experts = 256;
  m.moe_router_topk = 8;
  ParallelPlan p = moe_plan(1, 1, 64, 64);
  p.moe_token_dispatcher_type = MoeTokenDispatcher::kFlex;
  const auto calls = [&](const ModelSpec& model, const ParallelPlan& plan) {
    const ResolvedPlan r = resolve_plan(model, plan, 64, 8);
    const Workload w = build_workload(model, r);
    std::vector<double> bytes;
    for (const KernelList& list : w.kernels) {
      if (list.name != "moe layer forward") continue;
      for (const TpCollective& c : list.tp_collectives) {
        if (c.group == ComputeGroup::kExpert) bytes.push_back(c.bytes / expert_load_factor(model, r));
      }
    }
    return bytes;
  };
  const double token_bytes = 4096.0 * 4096 * 2;  // T = s tokens of h bf16
  const std::vector<double> unlimited = calls(m, p);
  ASSERT_EQ(unlimited.size(), 2U);
  EXPECT_NEAR(unlimited[0], token_bytes * 8 * (1 - std::pow(7.0 / 8, 8)), 1e-6 * token_bytes);
  ModelSpec limited = m;
  limited.moe_router_num_groups = 8;
  limited.moe_router_group_topk = 4;
  EXPECT_NEAR(calls(limited, p)[1], token_bytes * 4 * (1 - std::pow(3.0 / 4, 8)), 1e-6 * token_bytes);
  ParallelPlan fp8 = p;
  fp8.fp8 = Fp8Format::kE4m3;
  const std::vector<double> halved = calls(limited, fp8);
  EXPECT_NEAR(halved[0], halved[1] / 2, 1e-9 * halved[1]);
  // Bad groups are refused by name.
  ModelSpec uneven = limited;
  uneven.moe_router_num_groups = 3;
  EXPECT_EQ(plan_error_key(uneven, p, 64), "model.moe_router_num_groups");
  ModelSpec too_few = limited;
  too_few.moe_router_group_topk = 0;
  EXPECT_EQ(plan_error_key(too_few, p, 64), "model.moe_router_group_topk");
  ParallelPlan etp = moe_plan(2, 1, 8, 64);
  etp.moe_token_dispatcher_type = MoeTokenDispatcher::kFlex;
  etp.expert_tensor_parallel_size = 2;
  EXPECT_EQ(plan_error_key(m, etp, 64), "plan.expert_tensor_parallel_size");
}

// The distributed optimizer shards the dense state over DP and the experts' over expert DP.
TEST(Moe, DistributedOptimizerShardsExpertsOverExpertDp) {
  const ModelSpec m = mixtral();
  ParallelPlan p = moe_plan(1, 4, 8, 64);
  p.use_distributed_optimizer = true;
  const ResolvedPlan plan = resolve_plan(m, p, 64, 8);  // DP 16, EP 8, expert DP 2
  ASSERT_EQ(plan.edp, 2);
  const MemoryEstimate memory = estimate_memory(m, plan);
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    const ParameterCount c = stage_parameters(m, plan, stage);
    const MemoryBreakdown& b = memory.stages[static_cast<std::size_t>(stage)];
    EXPECT_EQ(b.parameters_bytes, 2 * c.total());
    EXPECT_EQ(b.gradients_bytes, 4 * c.total());
    EXPECT_EQ(b.optimizer_bytes, 12 * ((c.dense + 15) / 16 + (c.expert + 1) / 2));
  }
  // More skew, more rows on the busiest rank, more activations.
  ModelSpec skewed = m;
  skewed.moe_router_load_skew = 1;
  EXPECT_GT(moe_layer_activation_bytes(skewed, plan), moe_layer_activation_bytes(m, plan));
}

TEST(Moe, BadKeysAreRefusedByName) {
  const ModelSpec m = mixtral();
  EXPECT_EQ(plan_error_key(m, moe_plan(1, 1, 3, 24), 24), "plan.expert_model_parallel_size");  // 3 does not divide 8
  EXPECT_EQ(plan_error_key(m, moe_plan(1, 1, 16, 16), 16), "plan.expert_model_parallel_size");
  EXPECT_EQ(plan_error_key(m, moe_plan(1, 1, 8, 4), 4), "plan.expert_model_parallel_size");  // 8 > tp x dp
  ParallelPlan no_sp = moe_plan(2, 1, 1, 8);
  no_sp.sequence_parallel = false;
  EXPECT_EQ(plan_error_key(m, no_sp, 8), "plan.sequence_parallel");
  ParallelPlan etp = moe_plan(1, 1, 1, 8);
  etp.expert_tensor_parallel_size = 3;
  EXPECT_EQ(plan_error_key(m, etp, 8), "plan.expert_tensor_parallel_size");
  ParallelPlan sharded = moe_plan(1, 1, 8, 8);
  sharded.use_distributed_optimizer = true;
  sharded.data_parallel_sharding_strategy = DataParallelSharding::kOptimGrads;
  EXPECT_EQ(plan_error_key(m, sharded, 8), "plan.data_parallel_sharding_strategy");
  ModelSpec dense = mixtral();
  dense.num_experts = 0;
  EXPECT_EQ(plan_error_key(dense, moe_plan(1, 1, 2, 8), 8), "plan.expert_model_parallel_size");
  const auto model_error = [](ModelSpec bad) {
    try {
      validate(bad);
    } catch (const sim::ConfigError& e) {
      return e.key();
    }
    return std::string();
  };
  ModelSpec topk = mixtral();
  topk.moe_router_topk = 9;
  EXPECT_EQ(model_error(topk), "model.moe_router_topk");
  ModelSpec capacity = mixtral();
  capacity.moe_expert_capacity_factor = -1;
  EXPECT_EQ(model_error(capacity), "model.moe_expert_capacity_factor");
  ModelSpec skew = mixtral();
  skew.moe_router_load_skew = 11;
  EXPECT_EQ(model_error(skew), "model.moe_router_load_skew");
  ModelSpec freq = mixtral();
  freq.moe_layer_freq = 0;
  EXPECT_EQ(model_error(freq), "model.moe_layer_freq");
  ModelSpec first = mixtral();
  first.moe_first_dense_layers = 32;
  EXPECT_EQ(model_error(first), "model.moe_first_dense_layers");
}

}  // namespace
}  // namespace megasim::models
