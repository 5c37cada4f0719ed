// What each plan switch does to the workload, and the sizes of its communication, derived by hand:
// data-parallel buckets and bytes, TP collectives per layer, pipeline bytes, data loading, the
// optimizer step and the tied-embedding exchange.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/workload.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::resolved;
using testing::Shape;
using testing::small_gpt;

// s = 32, b = 1, h = 64 for small_gpt with micro-batch 1.
constexpr double kS = 32, kB = 1, kH = 64;

const KernelList& list_named(const Workload& w, const std::string& name) {
  const auto it = std::find_if(w.kernels.begin(), w.kernels.end(), [&](const KernelList& k) { return k.name == name; });
  EXPECT_NE(it, w.kernels.end()) << name;
  return *it;
}

double dp_bytes(const StageProgram& p, CollectiveOp op) {
  double total = 0;
  for (const Task& t : p.tasks) {
    const bool gradients_or_parameters = t.category != TaskCategory::kLossReduce;
    total += t.kind == TaskKind::kDpCollective && t.op == op && gradients_or_parameters ? t.bytes : 0.0;
  }
  return total;
}

std::vector<std::int32_t> indices_of(const StageProgram& p, TaskCategory category) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    if (p.tasks[i].category == category) out.push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

// The distributed optimizer reduce-scatters 4 bytes (fp32 gradient) and all-gathers 2 bytes (bf16
// parameter) of every parameter the rank holds, in whatever buckets; without it an all-reduce of
// the 4-byte gradients.
TEST(WorkloadDataParallel, BytesCoverTheStagesParametersOnce) {
  for (const Shape& s : testing::pipeline_shapes()) {
    for (bool distributed : {false, true}) {
      for (bool overlap : {false, true}) {
        const ResolvedPlan plan = resolved(small_gpt(), s, [&](ParallelPlan& p) {
          p.use_distributed_optimizer = distributed;
          p.overlap_grad_reduce = overlap;
          p.overlap_param_gather = overlap && distributed;
        });
        const Workload w = build_workload(small_gpt(), plan);
        for (std::int64_t k = 0; k < s.pp; ++k) {
          const StageProgram& p = w.stages[static_cast<std::size_t>(k)];
          const double params = static_cast<double>(stage_parameter_count(small_gpt(), s.tp, s.pp, k));
          EXPECT_DOUBLE_EQ(dp_bytes(p, CollectiveOp::kReduceScatter), distributed ? 4 * params : 0.0);
          EXPECT_DOUBLE_EQ(dp_bytes(p, CollectiveOp::kAllGather), distributed ? 2 * params : 0.0);
          EXPECT_DOUBLE_EQ(dp_bytes(p, CollectiveOp::kAllReduce), distributed ? 0.0 : 4 * params);
        }
      }
    }
  }
}

// Megatron core DDP: buckets of max(40e6, 1e6 * dp) parameters on the first stage's chunk 0 when
// overlap_grad_reduce is on; one bucket per chunk otherwise.
TEST(WorkloadDataParallel, BucketsFollowMegatronCoreDdp) {
  ModelSpec model = small_gpt();
  model.hidden_size = 1024;
  model.num_attention_heads = 16;
  for (std::int64_t dp : {2, 64}) {
    const Shape s{1, 2, dp, 2, 1, 1};
    const ResolvedPlan plan = resolved(model, s, [](ParallelPlan& p) { p.overlap_grad_reduce = true; });
    const std::int64_t n0 = stage_parameter_count(model, 1, 2, 0);  // ~152e6: 12 layers of 12.6e6 + embeddings
    const std::int64_t size = dp == 2 ? 40'000'000 : 64'000'000;
    std::vector<std::int64_t> expected(static_cast<std::size_t>(n0 / size), size);
    expected.push_back(n0 % size);
    EXPECT_EQ(gradient_bucket_params(model, plan, 0, 0), expected);
    EXPECT_EQ(expected.size(), dp == 2 ? 4u : 3u);
    EXPECT_EQ(gradient_bucket_params(model, plan, 1, 0),
              std::vector<std::int64_t>{stage_parameter_count(model, 1, 2, 1)});
    const ResolvedPlan plain = resolved(model, s);
    EXPECT_EQ(gradient_bucket_params(model, plain, 0, 0), std::vector<std::int64_t>{n0});
  }
}

TEST(WorkloadDataParallel, ChunkParametersSumToTheStage) {
  const Shape s{2, 4, 1, 8, 3, 1};
  const ResolvedPlan plan = resolved(small_gpt(), s);
  for (std::int64_t k = 0; k < s.pp; ++k) {
    std::int64_t sum = 0;
    for (std::int64_t c = 0; c < s.v; ++c) sum += chunk_parameter_count(small_gpt(), plan, k, c);
    EXPECT_EQ(sum, stage_parameter_count(small_gpt(), s.tp, s.pp, k));
  }
  // Middle chunks hold only their layers: 24 / (4 * 3) = 2 layers.
  EXPECT_EQ(chunk_parameter_count(small_gpt(), plan, 1, 1), 2 * layer_parameter_count_per_tp_rank(small_gpt(), 2));
}

// overlap_grad_reduce: a chunk's buckets wait for that chunk's last backward; without it, every
// bucket waits for the final backward of the schedule.
TEST(WorkloadDataParallel, OverlapGradReduceIssuesBucketsAfterEachChunksLastBackward) {
  const Shape s{1, 2, 2, 4, 3, 1};
  for (bool overlap : {false, true}) {
    const Workload w = build_workload(
        small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) { p.overlap_grad_reduce = overlap; }));
    for (const StageProgram& p : w.stages) {
      std::vector<std::int32_t> last_backward(3, -1);
      std::int32_t final_backward = -1;
      for (std::int32_t i : indices_of(p, TaskCategory::kBackward)) {
        last_backward[static_cast<std::size_t>(p.tasks[static_cast<std::size_t>(i)].chunk)] = i;
        final_backward = i;
      }
      for (std::int32_t i : indices_of(p, TaskCategory::kGradientReduce)) {
        const Task& t = p.tasks[static_cast<std::size_t>(i)];
        if (t.kind != TaskKind::kDpCollective) continue;
        const std::int32_t expected = overlap ? last_backward[static_cast<std::size_t>(t.chunk)] : final_backward;
        EXPECT_NE(std::find(t.deps.begin(), t.deps.end(), expected), t.deps.end());
        // Nothing later than that backward is waited for by an overlapped bucket.
        if (overlap) {
          EXPECT_EQ(t.deps, std::vector<std::int32_t>{expected});
        }
      }
    }
  }
}

// overlap_param_gather: the all-gathers lead the program and each chunk's first forward waits for its
// own; otherwise they follow the optimizer step.
TEST(WorkloadDataParallel, OverlapParamGatherPrefetchesAtTheStart) {
  const Shape s{1, 2, 2, 4, 3, 1};
  for (bool overlap : {false, true}) {
    const Workload w = build_workload(small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) {
                                        p.use_distributed_optimizer = true;
                                        p.overlap_grad_reduce = true;
                                        p.overlap_param_gather = overlap;
                                        // Megatron's synchronize after p2p calls would wait for
                                        // every gather in flight; this test is about the prefetch.
                                        p.batch_p2p_sync = false;
                                      }));
    for (const StageProgram& p : w.stages) {
      const std::vector<std::int32_t> gathers = indices_of(p, TaskCategory::kParameterGather);
      const std::int32_t optimizer = indices_of(p, TaskCategory::kOptimizer).front();
      ASSERT_EQ(gathers.size(), 3u);  // one bucket per chunk at this size
      for (std::int32_t g : gathers) {
        if (overlap) {
          EXPECT_LT(g, 3);
          EXPECT_TRUE(p.tasks[static_cast<std::size_t>(g)].deps.empty());
        } else {
          EXPECT_GT(g, optimizer);
          EXPECT_EQ(p.tasks[static_cast<std::size_t>(g)].deps, std::vector<std::int32_t>{optimizer});
        }
      }
      if (!overlap) continue;
      std::vector<bool> seen(3, false);
      for (std::int32_t i : indices_of(p, TaskCategory::kForward)) {
        const Task& t = p.tasks[static_cast<std::size_t>(i)];
        const bool first = !seen[static_cast<std::size_t>(t.chunk)];
        seen[static_cast<std::size_t>(t.chunk)] = true;
        const bool waits = std::find(t.deps.begin(), t.deps.end(), t.chunk) != t.deps.end();  // gather c is task c
        EXPECT_EQ(waits, first);
      }
    }
  }
}

int collectives_per_layer(const KernelList& list) {
  int n = 0;
  for (const TpCollective& c : list.tp_collectives) n += c.count;
  return n;
}

// Per layer, Megatron forward: 2 all-reduces (no SP) or 2 all-gathers + 2 reduce-scatters (SP);
// backward: 2 all-reduces, or 2 + 2 all-gathers (output gradient, input re-gather) + 2
// reduce-scatters. The parallel block has one column- and one row-parallel GEMM: half of each.
TEST(WorkloadTensorParallel, ParallelBlockHalvesTheLayerCollectives) {
  for (bool sp : {false, true}) {
    for (bool parallel : {false, true}) {
      const Workload w =
          build_workload(small_gpt(), resolved(small_gpt(), Shape{4, 1, 1, 1, 1, 1}, [&](ParallelPlan& p) {
                           p.sequence_parallel = sp;
                           p.parallel_transformer_block = parallel;
                         }));
      const int scale = parallel ? 1 : 2;
      EXPECT_EQ(collectives_per_layer(list_named(w, "chunk forward")), (sp ? 2 : 1) * scale);
      EXPECT_EQ(collectives_per_layer(list_named(w, "chunk backward")), (sp ? 3 : 1) * scale);
      for (const TpCollective& c : list_named(w, "chunk forward").tp_collectives) {
        EXPECT_DOUBLE_EQ(c.bytes, 2 * kS * kB * kH);  // the whole (s, b, h) bf16 tensor
      }
    }
  }
}

TEST(WorkloadTensorParallel, FullRecomputeRepeatsTheForwardCollectives) {
  const auto build = [](RecomputeGranularity g) {
    return build_workload(small_gpt(), resolved(small_gpt(), Shape{4, 1, 1, 1, 1, 1}, [&](ParallelPlan& p) {
                            p.sequence_parallel = true;
                            p.recompute_granularity = g;
                          }));
  };
  const int none = collectives_per_layer(list_named(build(RecomputeGranularity::kNone), "chunk backward"));
  EXPECT_EQ(collectives_per_layer(list_named(build(RecomputeGranularity::kSelective), "chunk backward")), none);
  EXPECT_EQ(collectives_per_layer(list_named(build(RecomputeGranularity::kFull), "chunk backward")), none + 4);
}

// tp_comm_overlap marks every layer collective overlappable; without it only Megatron's
// asynchronous backward calls are (the grad-input reduction, and with SP the input re-gather).
TEST(WorkloadTensorParallel, TpCommOverlapMarksTheLayerCollectivesOverlappable) {
  for (bool overlap : {false, true}) {
    const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{4, 1, 1, 1, 1, 1}, [&](ParallelPlan& p) {
                                        p.sequence_parallel = true;
                                        p.tp_comm_overlap = overlap;
                                      }));
    int forward = 0, backward = 0;
    for (const TpCollective& c : list_named(w, "chunk forward").tp_collectives) forward += c.overlappable ? c.count : 0;
    for (const TpCollective& c : list_named(w, "chunk backward").tp_collectives)
      backward += c.overlappable ? c.count : 0;
    EXPECT_EQ(forward, overlap ? 4 : 0);
    EXPECT_EQ(backward, overlap ? 6 : 4);
  }
}

TEST(WorkloadTensorParallel, NoCollectivesWithoutTensorParallelism) {
  const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{1, 1, 1, 1, 1, 1}));
  for (const KernelList& list : w.kernels) EXPECT_TRUE(list.tp_collectives.empty()) << list.name;
}

// The output layer's vocab-parallel cross-entropy all-reduces the max, target logit and sum of
// exponentials: three fp32 values per token.
TEST(WorkloadTensorParallel, CrossEntropyAllReducesThreeFloatsPerToken) {
  const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{4, 1, 1, 1, 1, 1}));
  const KernelList& output = list_named(w, "output forward");
  ASSERT_EQ(output.tp_collectives.size(), 1u);
  EXPECT_EQ(output.tp_collectives[0].op, CollectiveOp::kAllReduce);
  EXPECT_EQ(output.tp_collectives[0].count, 3);
  EXPECT_DOUBLE_EQ(output.tp_collectives[0].bytes, 4 * kS * kB);
}

// Megatron sends the full (s, b, h) bf16 hidden state per TP rank; sequence parallelism splits the
// sequence over the TP ranks first.
TEST(WorkloadPipeline, SequenceParallelDividesTransferBytesByTp) {
  for (bool sp : {false, true}) {
    const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{4, 2, 1, 2, 1, 1},
                                                            [&](ParallelPlan& p) { p.sequence_parallel = sp; }));
    for (const StageProgram& p : w.stages) {
      for (const Task& t : p.tasks) {
        if (t.category != TaskCategory::kPipelineForward && t.category != TaskCategory::kPipelineBackward) continue;
        EXPECT_DOUBLE_EQ(t.bytes, 2 * kS * kB * kH / (sp ? 4.0 : 1.0));
      }
    }
  }
}

// The tied word embedding's fp32 gradient (padded vocab / tp rows of h) goes both ways between the
// first and last stage; untied embeddings need no exchange.
TEST(WorkloadPipeline, TiedEmbeddingGradientsAreExchanged) {
  for (bool untie : {false, true}) {
    ModelSpec model = small_gpt();
    model.untie_embeddings_and_output_weights = untie;
    const ResolvedPlan plan = resolved(model, Shape{2, 3, 1, 3, 1, 1});
    const Workload w = build_workload(model, plan);
    for (std::int64_t k = 0; k < 3; ++k) {
      int exchanged = 0;
      for (const Task& t : w.stages[static_cast<std::size_t>(k)].tasks) {
        if (t.category != TaskCategory::kGradientReduce || t.kind == TaskKind::kDpCollective) continue;
        ++exchanged;
        EXPECT_DOUBLE_EQ(t.bytes, 4.0 * (1024.0 / 2) * kH);  // vocab 1000 padded to 128 * tp = 256
      }
      EXPECT_EQ(exchanged, !untie && k != 1 ? 2 : 0);
    }
  }
}

// get_batch broadcasts int64 tokens, labels and position ids, an fp32 loss mask and a bool s x s
// attention mask per sample: the first stage tokens, mask and positions, the last labels, loss mask
// and mask.
TEST(WorkloadDataLoading, BroadcastsTheBatchUnlessAsync) {
  for (bool async : {false, true}) {
    const Workload w = build_workload(small_gpt(), resolved(small_gpt(), Shape{2, 2, 1, 2, 1, 1},
                                                            [&](ParallelPlan& p) { p.async_data_loading = async; }));
    int tasks = 0;
    for (const StageProgram& p : w.stages) tasks += static_cast<int>(indices_of(p, TaskCategory::kDataLoading).size());
    EXPECT_EQ(tasks, async ? 0 : 4);
    if (async) continue;
    const auto total = [](const KernelList& list) {
      double bytes = 0;
      for (const TpCollective& c : list.tp_collectives) {
        EXPECT_EQ(c.op, CollectiveOp::kBroadcast);
        bytes += c.bytes * c.count;
      }
      EXPECT_TRUE(list.ops.empty());
      return bytes;
    };
    EXPECT_DOUBLE_EQ(total(list_named(w, "data loading (first stage)")), 8 * kS + kS * kS + 8 * kS);
    EXPECT_DOUBLE_EQ(total(list_named(w, "data loading (last stage)")), 8 * kS + 4 * kS + kS * kS);
  }
}

// Adam over the rank's shard: gradient norm 4, Adam 4 + 3 x 8, bf16 copy 4 + 2 bytes per parameter;
// the distributed optimizer's shard is ceil(params / dp).
// 38 bytes per parameter of the rank's optimizer shard (gradient norm 4, Adam 28, copy to the bf16
// weights 6), plus zeroing the fp32 gradient buffer: 4 bytes per parameter the rank holds.
TEST(WorkloadOptimizer, StepStreamsThirtyEightBytesPerShardParameterAndZeroesTheGradients) {
  for (bool distributed : {false, true}) {
    const ResolvedPlan plan = resolved(small_gpt(), Shape{2, 2, 4, 4, 1, 1},
                                       [&](ParallelPlan& p) { p.use_distributed_optimizer = distributed; });
    const Workload w = build_workload(small_gpt(), plan);
    for (std::int64_t k = 0; k < 2; ++k) {
      const StageProgram& p = w.stages[static_cast<std::size_t>(k)];
      const Task& step = p.tasks[static_cast<std::size_t>(indices_of(p, TaskCategory::kOptimizer).front())];
      ASSERT_EQ(step.runs.size(), 1u);
      const KernelList& list = testing::kernels_of(w, step.runs[0]);
      const std::int64_t params = stage_parameter_count(small_gpt(), 2, 2, k);
      const double shard = static_cast<double>(distributed ? (params + 3) / 4 : params);
      double bytes = 0;
      for (const LayerOp& op : list.ops) bytes += op.bytes;
      EXPECT_DOUBLE_EQ(bytes, 38 * shard + 4 * static_cast<double>(params));
      EXPECT_TRUE(list.tp_collectives.empty());  // no sequence parallelism
    }
  }
}

// With SP every TP rank holds the LayerNorm weights and biases and the row-parallel biases whole
// (6h per layer, plus the final LayerNorm's 2h on the last stage); their fp32 gradients are
// all-reduced over TP once before the step.
TEST(WorkloadOptimizer, SequenceParallelAllReducesTheReplicatedGradients) {
  const ResolvedPlan plan =
      resolved(small_gpt(), Shape{2, 2, 1, 2, 1, 1}, [](ParallelPlan& p) { p.sequence_parallel = true; });
  const Workload w = build_workload(small_gpt(), plan);
  for (std::int64_t k = 0; k < 2; ++k) {
    const StageProgram& p = w.stages[static_cast<std::size_t>(k)];
    const Task& step = p.tasks[static_cast<std::size_t>(indices_of(p, TaskCategory::kOptimizer).front())];
    const KernelList& list = testing::kernels_of(w, step.runs[0]);
    ASSERT_EQ(list.tp_collectives.size(), 1u);
    EXPECT_EQ(list.tp_collectives[0].op, CollectiveOp::kAllReduce);
    EXPECT_DOUBLE_EQ(list.tp_collectives[0].bytes, 4 * (12 * 6 * kH + (k == 1 ? 2 * kH : 0.0)));
  }
}

}  // namespace
}  // namespace megasim::models
