// Structure of build_workload's programs, checked against invariants and hand counts: task counts,
// send/recv pairing, dependency order, the compute order of pipeline_schedule, FLOP and byte
// conservation, and what each plan switch changes.
#include "models/workload.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "models/flops.h"
#include "models/layer_ops.h"
#include "models/pipeline_schedule.h"
#include "workload_test_util.h"

namespace megasim::models {
namespace {

using testing::resolved;
using testing::Shape;
using testing::small_gpt;

std::int64_t count(const StageProgram& program, TaskKind kind, TaskCategory category) {
  std::int64_t n = 0;
  for (const Task& t : program.tasks) n += t.kind == kind && t.category == category ? 1 : 0;
  return n;
}

TEST(Workload, TaskCountsPerStage) {
  for (const Shape& s : testing::pipeline_shapes()) {
    const Workload w = build_workload(small_gpt(), resolved(small_gpt(), s));
    ASSERT_EQ(w.stages.size(), static_cast<std::size_t>(s.pp));
    for (std::int64_t k = 0; k < s.pp; ++k) {
      const StageProgram& p = w.stages[static_cast<std::size_t>(k)];
      SCOPED_TRACE(testing::describe(s, k));
      EXPECT_EQ(count(p, TaskKind::kCompute, TaskCategory::kForward), s.m * s.v);
      EXPECT_EQ(count(p, TaskKind::kCompute, TaskCategory::kBackward), s.m * s.v);
      EXPECT_EQ(count(p, TaskKind::kCompute, TaskCategory::kOptimizer), 1);
      // The first stage loads every micro-batch for chunk 0, the last for its last chunk.
      const std::int64_t loads = (k == 0 ? s.m : 0) + (k == s.pp - 1 && s.pp > 1 ? s.m : 0);
      EXPECT_EQ(count(p, TaskKind::kCompute, TaskCategory::kDataLoading), loads);
      // Virtual stages 0 and pp*v-1 have no input resp. no output; stage 0 holds virtual stage 0
      // (chunk 0), the last stage the last virtual stage: m fewer transfers there.
      const std::int64_t first = k == 0 ? s.m : 0, last = k == s.pp - 1 ? s.m : 0;
      EXPECT_EQ(count(p, TaskKind::kPpRecv, TaskCategory::kPipelineForward), s.m * s.v - first);
      EXPECT_EQ(count(p, TaskKind::kPpSend, TaskCategory::kPipelineForward), s.m * s.v - last);
      EXPECT_EQ(count(p, TaskKind::kPpRecv, TaskCategory::kPipelineBackward), s.m * s.v - last);
      EXPECT_EQ(count(p, TaskKind::kPpSend, TaskCategory::kPipelineBackward), s.m * s.v - first);
      // Defaults: all-reduce, one bucket per chunk (no overlap_grad_reduce); tied embeddings
      // exchanged between the first and last stage when they differ.
      EXPECT_EQ(count(p, TaskKind::kDpCollective, TaskCategory::kGradientReduce), s.v);
      const std::int64_t exchange = s.pp > 1 && (k == 0 || k == s.pp - 1) ? 1 : 0;
      EXPECT_EQ(count(p, TaskKind::kPpSend, TaskCategory::kGradientReduce), exchange);
      EXPECT_EQ(count(p, TaskKind::kPpRecv, TaskCategory::kGradientReduce), exchange);
      EXPECT_EQ(count(p, TaskKind::kDpCollective, TaskCategory::kParameterGather), 0);
    }
  }
}

// Every send has exactly one receive with its tag on the peer stage, from the opposite direction
// and of the same size, and every receive one send.
TEST(Workload, SendsAndReceivesPairUp) {
  for (const Shape& s : testing::pipeline_shapes()) {
    for (bool sp : {false, true}) {
      const Workload w =
          build_workload(small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) { p.sequence_parallel = sp; }));
      // (stage, kind, tag) -> tasks
      std::map<std::tuple<std::int64_t, TaskKind, std::int64_t>, std::vector<const Task*>> index;
      for (std::int64_t k = 0; k < s.pp; ++k) {
        for (const Task& t : w.stages[static_cast<std::size_t>(k)].tasks) {
          if (t.kind == TaskKind::kPpSend || t.kind == TaskKind::kPpRecv) index[{k, t.kind, t.tag}].push_back(&t);
        }
      }
      for (const auto& [key, tasks] : index) {
        const auto& [stage, kind, tag] = key;
        SCOPED_TRACE(testing::describe(s, stage));
        ASSERT_EQ(tasks.size(), 1u) << "tag " << tag << " used twice";
        const Task& t = *tasks.front();
        ASSERT_TRUE(t.peer_offset == 1 || t.peer_offset == -1);
        const std::int64_t peer = ((stage + t.peer_offset) % s.pp + s.pp) % s.pp;
        const TaskKind other = kind == TaskKind::kPpSend ? TaskKind::kPpRecv : TaskKind::kPpSend;
        const auto it = index.find({peer, other, tag});
        ASSERT_NE(it, index.end()) << "no partner for tag " << tag;
        const Task& partner = *it->second.front();
        EXPECT_EQ(partner.peer_offset, -t.peer_offset);
        EXPECT_DOUBLE_EQ(partner.bytes, t.bytes);
        EXPECT_EQ(partner.category, t.category);
        EXPECT_EQ(partner.microbatch, t.microbatch);
      }
    }
  }
}

TEST(Workload, DependenciesPointToEarlierTasks) {
  for (const Shape& s : testing::pipeline_shapes()) {
    for (bool overlap : {false, true}) {
      const Workload w = build_workload(small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) {
                                          p.use_distributed_optimizer = true;
                                          p.overlap_grad_reduce = overlap;
                                          p.overlap_param_gather = overlap;
                                          p.overlap_p2p_comm = overlap;
                                        }));
      for (const StageProgram& p : w.stages) {
        for (std::size_t i = 0; i < p.tasks.size(); ++i) {
          for (std::int32_t d : p.tasks[i].deps) {
            EXPECT_GE(d, 0);
            EXPECT_LT(static_cast<std::size_t>(d), i);
          }
        }
      }
    }
  }
}

TEST(Workload, ComputeOrderIsPipelineSchedule) {
  for (const Shape& s : testing::pipeline_shapes()) {
    const ResolvedPlan plan = resolved(small_gpt(), s);
    const Workload w = build_workload(small_gpt(), plan);
    for (std::int64_t k = 0; k < s.pp; ++k) {
      std::vector<ScheduleStep> order;
      for (const Task& t : w.stages[static_cast<std::size_t>(k)].tasks) {
        if (t.kind != TaskKind::kCompute) continue;
        if (t.category != TaskCategory::kForward && t.category != TaskCategory::kBackward) continue;
        const PassKind pass = t.category == TaskCategory::kForward ? PassKind::kForward : PassKind::kBackward;
        order.push_back(ScheduleStep{pass, t.microbatch, t.chunk});
      }
      EXPECT_EQ(order, pipeline_schedule(k, s.pp, s.m, s.v)) << testing::describe(s, k);
    }
  }
}

// Forward of (mb, chunk) runs chunk forward x layers per chunk, with the embedding before it on the
// first stage's chunk 0 and the output layer after it on the last stage's last chunk; backward the
// mirror image.
TEST(Workload, ComputeTasksRunTheirChunksLayers) {
  const Shape s{1, 2, 1, 4, 2, 1};
  const Workload w = build_workload(small_gpt(), resolved(small_gpt(), s));
  const std::int32_t layers = 24 / (2 * 2);
  for (std::int64_t k = 0; k < s.pp; ++k) {
    for (const Task& t : w.stages[static_cast<std::size_t>(k)].tasks) {
      if (t.category != TaskCategory::kForward && t.category != TaskCategory::kBackward) continue;
      const bool forward = t.category == TaskCategory::kForward;
      std::vector<std::string> names;
      for (const Task::KernelRun& run : t.runs) names.push_back(testing::kernels_of(w, run).name);
      std::vector<std::string> expected = {forward ? "chunk forward" : "chunk backward"};
      if (k == 0 && t.chunk == 0)
        expected.insert(forward ? expected.begin() : expected.end(),
                        forward ? "embedding forward" : "embedding backward");
      if (k == 1 && t.chunk == 1)
        expected.insert(forward ? expected.end() : expected.begin(), forward ? "output forward" : "output backward");
      EXPECT_EQ(names, expected);
      for (const Task::KernelRun& run : t.runs) {
        const bool chunk = testing::kernels_of(w, run).name.starts_with("chunk");
        EXPECT_EQ(run.repeat, chunk ? layers : 1);
      }
    }
  }
}

// Summing every compute task's op FLOPs over the stages, times the TP and DP ranks running the same
// program, gives flops.h's count: the model FLOPs without the recompute ops, the hardware FLOPs
// with them.
TEST(Workload, FlopsAreConserved) {
  const std::vector<std::function<void(ParallelPlan&)>> variants = {
      [](ParallelPlan&) {},
      [](ParallelPlan& p) { p.recompute_granularity = RecomputeGranularity::kFull; },
      [](ParallelPlan& p) { p.recompute_granularity = RecomputeGranularity::kSelective; },
      [](ParallelPlan& p) {
        p.sequence_parallel = true;
        p.parallel_transformer_block = true;
        p.sliding_window_size = 16;
        p.use_flash_attention = true;
        p.recompute_granularity = RecomputeGranularity::kFull;
      },
  };
  for (const Shape& s : testing::pipeline_shapes()) {
    for (const auto& change : variants) {
      const ResolvedPlan plan = resolved(small_gpt(), s, change);
      const Workload w = build_workload(small_gpt(), plan);
      double model = 0, hardware = 0;
      for (const StageProgram& p : w.stages) {
        for (const Task& t : p.tasks) {
          model += task_model_flops(w, t);
          hardware += task_hardware_flops(w, t);
        }
      }
      const double ranks = static_cast<double>(plan.tp * plan.dp);
      const IterationFlops expected = iteration_flops(small_gpt(), plan);
      EXPECT_NEAR(model * ranks, expected.model, 1e-9 * expected.model) << testing::describe(s, 0);
      EXPECT_NEAR(hardware * ranks, expected.hardware, 1e-9 * expected.hardware) << testing::describe(s, 0);
      EXPECT_DOUBLE_EQ(w.model_flops, expected.model);
      EXPECT_DOUBLE_EQ(w.hardware_flops, expected.hardware);
    }
  }
}

TEST(Workload, RecomputeOpsLeadTheBackwardList) {
  for (auto granularity :
       {RecomputeGranularity::kNone, RecomputeGranularity::kSelective, RecomputeGranularity::kFull}) {
    const ResolvedPlan plan =
        resolved(small_gpt(), Shape{2, 2, 1, 2, 1, 1}, [&](ParallelPlan& p) { p.recompute_granularity = granularity; });
    const Workload w = build_workload(small_gpt(), plan);
    const std::vector<LayerOp> recompute = layer_ops(small_gpt(), plan, Pass::kRecompute);
    const std::vector<LayerOp> backward = layer_ops(small_gpt(), plan, Pass::kBackward);
    for (const KernelList& list : w.kernels) {
      if (list.name != "chunk backward") continue;
      ASSERT_EQ(list.recompute_ops, static_cast<std::int32_t>(recompute.size()));
      ASSERT_EQ(list.ops.size(), recompute.size() + backward.size());
      for (std::size_t i = 0; i < recompute.size(); ++i) EXPECT_EQ(list.ops[i].name, recompute[i].name);
      EXPECT_DOUBLE_EQ(kernel_list_model_flops(list), sum_flops(backward));
      EXPECT_DOUBLE_EQ(kernel_list_hardware_flops(list), sum_flops(backward) + sum_flops(recompute));
    }
  }
}

}  // namespace
}  // namespace megasim::models
