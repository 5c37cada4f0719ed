// Megatron-LM's host synchronisation in the stage programs (models/workload.h): the synchronize after
// every batched p2p call (batch_p2p_sync), the per-micro-batch loss all-reduce over DP
// (average_loss_per_micro_batch), and the host synchronisation of a synchronous get_batch. Each is
// checked against the plan's own structure: which compute steps follow a communication point, which
// forwards end in the loss.
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

bool is_p2p(const Task& t) {
  return t.kind == TaskKind::kPpSend || t.kind == TaskKind::kPpRecv;
}

bool is_pass(const Task& t) {
  return t.kind == TaskKind::kCompute &&
         (t.category == TaskCategory::kForward || t.category == TaskCategory::kBackward);
}

bool waits_for_p2p(const StageProgram& p, const Task& t) {
  return std::any_of(t.deps.begin(), t.deps.end(),
                     [&](std::int32_t d) { return is_p2p(p.tasks[static_cast<std::size_t>(d)]); });
}

int count(const StageProgram& p, TaskCategory category) {
  return static_cast<int>(
      std::count_if(p.tasks.begin(), p.tasks.end(), [&](const Task& t) { return t.category == category; }));
}

Workload build(const Shape& s, const std::function<void(ParallelPlan&)>& change) {
  return build_workload(small_gpt(), resolved(small_gpt(), s, [&](ParallelPlan& p) {
                          p.async_data_loading = true;
                          p.average_loss_per_micro_batch = false;
                          change(p);
                        }));
}

// Without the synchronize, the passes that wait for transfers are those after a communication
// point; with it each of them waits for one host synchronisation instead, which waits for the same
// transfers and has no kernels.
TEST(WorkloadHostSync, EveryCommunicationPointEndsInOneSynchronize) {
  for (const Shape& s : {Shape{1, 2, 1, 4}, Shape{1, 4, 1, 8}, Shape{2, 4, 2, 8, 2}, Shape{1, 2, 1, 4, 3}}) {
    const Workload plain = build(s, [](ParallelPlan& p) { p.batch_p2p_sync = false; });
    const Workload synced = build(s, [](ParallelPlan& p) { p.batch_p2p_sync = true; });
    for (std::size_t k = 0; k < plain.stages.size(); ++k) {
      const StageProgram& a = plain.stages[k];
      const StageProgram& b = synced.stages[k];
      const int points = static_cast<int>(std::count_if(
          a.tasks.begin(), a.tasks.end(), [&](const Task& t) { return is_pass(t) && waits_for_p2p(a, t); }));
      EXPECT_GT(points, 0) << "stage " << k;
      EXPECT_EQ(count(a, TaskCategory::kHostSync), 0);
      EXPECT_EQ(count(b, TaskCategory::kHostSync), points) << "stage " << k;
      for (const Task& t : b.tasks) {
        if (is_pass(t)) {
          EXPECT_FALSE(waits_for_p2p(b, t)) << "a pass waits for a transfer past its synchronize";
        }
        if (t.category != TaskCategory::kHostSync) continue;
        EXPECT_TRUE(t.host_sync);
        EXPECT_EQ(t.kind, TaskKind::kCompute);
        EXPECT_TRUE(t.runs.empty());
        EXPECT_TRUE(waits_for_p2p(b, t));
      }
      EXPECT_EQ(b.tasks.size(), a.tasks.size() + static_cast<std::size_t>(points));
    }
  }
}

// overlap_p2p_comm posts asynchronous, unbatched calls: nothing synchronises.
TEST(WorkloadHostSync, OverlappedPointToPointDoesNotSynchronize) {
  const Workload w = build(Shape{1, 4, 1, 8, 2}, [](ParallelPlan& p) {
    p.batch_p2p_sync = true;
    p.overlap_p2p_comm = true;
  });
  for (const StageProgram& p : w.stages) EXPECT_EQ(count(p, TaskCategory::kHostSync), 0);
}

// The loss of every micro-batch is all-reduced (4 bytes, one fp32) over DP after the last chunk's
// forward on the last stage, and the next compute waits for it; nowhere else, and not at dp = 1.
TEST(WorkloadHostSync, TheLossIsAveragedOverDataParallelEveryMicroBatch) {
  for (const Shape& s : {Shape{1, 1, 2, 3}, Shape{1, 4, 2, 8}, Shape{2, 2, 2, 4, 3}, Shape{1, 2, 1, 4}}) {
    const Workload w = build(s, [](ParallelPlan& p) { p.average_loss_per_micro_batch = true; });
    for (std::int64_t k = 0; k < s.pp; ++k) {
      const StageProgram& p = w.stages[static_cast<std::size_t>(k)];
      const bool last = k == s.pp - 1;
      EXPECT_EQ(count(p, TaskCategory::kLossReduce), last && s.dp > 1 ? s.m : 0) << "stage " << k;
      for (std::size_t i = 0; i < p.tasks.size(); ++i) {
        const Task& t = p.tasks[i];
        if (t.category != TaskCategory::kLossReduce) continue;
        EXPECT_EQ(t.kind, TaskKind::kDpCollective);
        EXPECT_EQ(t.op, CollectiveOp::kAllReduce);
        EXPECT_DOUBLE_EQ(t.bytes, 4.0);
        ASSERT_EQ(t.deps.size(), 1U);
        const Task& forward = p.tasks[static_cast<std::size_t>(t.deps[0])];
        EXPECT_EQ(forward.category, TaskCategory::kForward);
        EXPECT_EQ(forward.chunk, s.v - 1);
        EXPECT_EQ(forward.microbatch, t.microbatch);
        // The next compute task of the program waits for it.
        const auto next = std::find_if(p.tasks.begin() + static_cast<std::ptrdiff_t>(i) + 1, p.tasks.end(),
                                       [](const Task& c) { return c.kind == TaskKind::kCompute; });
        ASSERT_NE(next, p.tasks.end());
        EXPECT_NE(std::find(next->deps.begin(), next->deps.end(), static_cast<std::int32_t>(i)), next->deps.end());
      }
    }
    const Workload off = build(s, [](ParallelPlan& p) { p.average_loss_per_micro_batch = false; });
    for (const StageProgram& p : off.stages) EXPECT_EQ(count(p, TaskCategory::kLossReduce), 0);
  }
}

// A synchronous get_batch is a host synchronisation with the compute stream: it waits for the
// rank's previous compute task, and not for the prefetched parameter all-gathers, which only the
// forward's hooks wait for.
TEST(WorkloadHostSync, SynchronousDataLoadingSynchronizesWithTheComputeStream) {
  const Workload w = build(Shape{1, 2, 2, 4}, [](ParallelPlan& p) {
    p.async_data_loading = false;
    p.use_distributed_optimizer = p.overlap_grad_reduce = p.overlap_param_gather = true;
  });
  int loads = 0;
  for (const StageProgram& p : w.stages) {
    std::int32_t last_compute = -1;
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      if (t.category == TaskCategory::kDataLoading) {
        ++loads;
        EXPECT_TRUE(t.host_sync);
        if (last_compute >= 0) {
          EXPECT_NE(std::find(t.deps.begin(), t.deps.end(), last_compute), t.deps.end());
        }
        for (const std::int32_t d : t.deps) {
          EXPECT_NE(p.tasks[static_cast<std::size_t>(d)].category, TaskCategory::kParameterGather);
        }
      }
      if (t.kind == TaskKind::kCompute) last_compute = static_cast<std::int32_t>(i);
    }
  }
  EXPECT_EQ(loads, 2 * 4);  // the first and the last stage, every micro-batch
}

}  // namespace
}  // namespace megasim::models
