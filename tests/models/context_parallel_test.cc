// Context parallelism: the sequence split over cp ranks keeps the iteration's FLOPs, halves a
// rank's activations at cp 2, times a rank's attention as its share of the whole, places the K/V
// exchange of each cp_comm_type on the CP group with the bytes Transformer Engine moves, and
// refuses the splits Megatron refuses.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/flops.h"
#include "models/gpu_spec.h"
#include "models/memory.h"
#include "models/op_time.h"
#include "models/workload.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

using testing::plan_error_key;

// A Llama-style model: GQA (8 groups of 128), SwiGLU, RoPE, no dropout, 32K tokens per sequence.
ModelSpec llama() {
  return testing::llama_style(8, 32768);
}

ParallelPlan cp_plan(std::int64_t tp, std::int64_t cp, CpCommType type, std::int64_t global = 16) {
  ParallelPlan p;
  p.tensor_model_parallel_size = tp;
  p.context_parallel_size = cp;
  p.cp_comm_type = type;
  p.sequence_parallel = tp > 1;
  p.use_flash_attention = true;
  p.global_batch_size = global;
  return p;
}

const KernelList& list_named(const Workload& w, const std::string& name) {
  for (const KernelList& list : w.kernels) {
    if (list.name == name) return list;
  }
  throw std::runtime_error("no kernel list " + name);
}

// The same 16 sequences on 16 GPUs, split 16 ways over DP or 2 x 8 over CP x DP: the same work.
TEST(ContextParallel, TheSplitKeepsTheIterationsFlops) {
  const ModelSpec m = llama();
  const double whole = iteration_flops(m, resolve_plan(m, cp_plan(1, 1, CpCommType::kP2p), 16, 8)).model;
  for (const CpCommType type : {CpCommType::kP2p, CpCommType::kAllGather, CpCommType::kA2a}) {
    for (const std::int64_t cp : {2, 8}) {
      const ResolvedPlan plan = resolve_plan(m, cp_plan(1, cp, type), 16, 8);
      EXPECT_EQ(plan.dp, 16 / cp);
      EXPECT_EQ(plan.replicas(), 16);
      EXPECT_NEAR(iteration_flops(m, plan).model, whole, 1e-12 * whole) << to_string(type) << " " << cp;
    }
  }
}

// Every tensor a layer keeps is the rank's s/cp tokens' (FlashAttention keeps no s x s matrix).
TEST(ContextParallel, ARanksActivationsShrinkWithItsShare) {
  const ModelSpec m = llama();
  const ResolvedPlan one = resolve_plan(m, cp_plan(2, 1, CpCommType::kAllGather), 16, 8);
  const ResolvedPlan two = resolve_plan(m, cp_plan(2, 2, CpCommType::kAllGather), 16, 8);
  EXPECT_EQ(2 * layer_activation_bytes(m, two), layer_activation_bytes(m, one));
}

// p2p and all_gather: a rank attends its 2 load-balanced chunks against the keys before them, 1/cp
// of the causal pairs, timed as 1/cp of the whole attention; a2a: heads / cp over the whole sequence.
TEST(ContextParallel, ARanksAttentionIsItsShareOfTheWhole) {
  const ModelSpec m = llama();
  const GpuSpec& gpu = find_gpu("H100");
  const ComputeCalibration calib = default_compute_calibration(gpu);
  const auto attention_s = [&](const ResolvedPlan& plan) {
    for (const LayerOp& op : layer_ops(m, plan, Pass::kForward)) {
      if (op.name == "flash_attention") return op_time_s(op, plan.plan, gpu, calib);
    }
    return -1.0;
  };
  const double whole = attention_s(resolve_plan(m, cp_plan(1, 1, CpCommType::kP2p), 16, 8));
  const double p2p = attention_s(resolve_plan(m, cp_plan(1, 4, CpCommType::kP2p), 16, 8));
  EXPECT_NEAR(p2p, whole / 4, 1e-12);
  // Ring attention's transfers run beside cp - 1 = 3 of its 4 blocks (the forward's one attention
  // kernel); nothing to run beside without CP.
  const ResolvedPlan ring = resolve_plan(m, cp_plan(1, 4, CpCommType::kP2p), 16, 8);
  const ResolvedPlan plain = resolve_plan(m, cp_plan(1, 1, CpCommType::kP2p), 16, 8);
  EXPECT_NEAR(
      kernel_list_ring_attention_window_s(list_named(build_workload(m, ring), "chunk forward"), ring.plan, gpu, calib),
      0.75 * p2p, 1e-12);
  EXPECT_EQ(kernel_list_ring_attention_window_s(list_named(build_workload(m, plain), "chunk forward"), plain.plan, gpu,
                                                calib),
            0);
  // a2a: 32 heads / 4 over the whole sequence: the kernel of a quarter of the heads.
  const double a2a = attention_s(resolve_plan(m, cp_plan(1, 4, CpCommType::kA2a), 16, 8));
  EXPECT_GT(a2a, 0.9 * whole / 4);
  EXPECT_LT(a2a, 1.1 * whole / 4);
}

// Per layer on a TP rank with K and V of the local s/cp tokens (2 x T x 8 groups x 128 / tp bf16):
// all_gather gathers them (nccl-tests size cp x that) before the attention and reduce-scatters
// their gradients after its backward; a2a exchanges Q + K + V before and the output after.
TEST(ContextParallel, EachCommTypeExchangesItsBytesOverTheCpGroup) {
  const ModelSpec m = llama();
  const std::int64_t tp = 2, cp = 4;
  const double tokens = 32768.0 / cp;
  const double kv = 2 * tokens * 2 * 8 * 128 / tp;
  const double q = 2 * tokens * 4096 / tp;
  const auto context_calls = [](const KernelList& list) {
    std::vector<TpCollective> out;
    for (const TpCollective& c : list.tp_collectives) {
      if (c.group == ComputeGroup::kContext) out.push_back(c);
    }
    return out;
  };
  const Workload gather = build_workload(m, resolve_plan(m, cp_plan(tp, cp, CpCommType::kAllGather), 16, 8));
  const auto forward = context_calls(list_named(gather, "chunk forward"));
  ASSERT_EQ(forward.size(), 1U);
  EXPECT_EQ(forward[0].op, CollectiveOp::kAllGather);
  EXPECT_DOUBLE_EQ(forward[0].bytes, cp * kv);
  EXPECT_FALSE(forward[0].overlappable);
  const auto backward = context_calls(list_named(gather, "chunk backward"));
  ASSERT_EQ(backward.size(), 2U);
  EXPECT_EQ(backward[1].op, CollectiveOp::kReduceScatter);
  // p2p: the same volume around the ring, overlapped with the attention.
  const Workload ring = build_workload(m, resolve_plan(m, cp_plan(tp, cp, CpCommType::kP2p), 16, 8));
  EXPECT_TRUE(context_calls(list_named(ring, "chunk forward"))[0].overlappable);
  EXPECT_EQ(context_calls(list_named(ring, "chunk forward"))[0].window, OverlapWindow::kAttention);
  for (const TpCollective& c : context_calls(list_named(ring, "chunk backward"))) {
    EXPECT_EQ(c.window, OverlapWindow::kAttention);
  }
  const Workload a2a = build_workload(m, resolve_plan(m, cp_plan(tp, cp, CpCommType::kA2a), 16, 8));
  const auto exchanges = context_calls(list_named(a2a, "chunk forward"));
  ASSERT_EQ(exchanges.size(), 2U);
  EXPECT_DOUBLE_EQ(exchanges[0].bytes, q + kv);
  EXPECT_DOUBLE_EQ(exchanges[1].bytes, q);
  // The pipeline sends the rank's hidden state: s/cp tokens, over tp with SP.
  for (const Task& t : a2a.stages[0].tasks) {
    if (t.kind == TaskKind::kPpSend) {
      EXPECT_DOUBLE_EQ(t.bytes, 2 * tokens * 4096 / tp);
    }
  }
}

TEST(ContextParallel, BadSplitsAreRefusedByName) {
  const ModelSpec m = llama();
  EXPECT_EQ(plan_error_key(m, cp_plan(1, 3, CpCommType::kP2p), 16), "plan.context_parallel_size");  // 3 into 16
  ModelSpec odd = llama();
  odd.seq_length = 4100;  // 2 x 4 chunks do not split it
  EXPECT_EQ(plan_error_key(odd, cp_plan(1, 4, CpCommType::kP2p), 16), "plan.context_parallel_size");
  ParallelPlan unfused = cp_plan(1, 2, CpCommType::kP2p);
  unfused.use_flash_attention = false;
  EXPECT_EQ(plan_error_key(m, unfused, 16), "plan.context_parallel_size");
  // a2a splits a TP rank's 4 query groups (8 over tp 2) over cp 8: not divisible.
  EXPECT_EQ(plan_error_key(m, cp_plan(2, 8, CpCommType::kA2a), 16), "plan.context_parallel_size");
  ParallelPlan zero = cp_plan(1, 1, CpCommType::kP2p);
  zero.context_parallel_size = 0;
  EXPECT_EQ(plan_error_key(m, zero, 16), "plan.context_parallel_size");
}

}  // namespace
}  // namespace megasim::models
