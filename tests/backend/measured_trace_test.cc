// A Trace from a real backend's per-rank records (backend/measured_trace.h): one unit per rank in
// Megatron's order, the iteration's end, and a pipeline transfer beginning once both sides posted.
#include "backend/measured_trace.h"

#include <gtest/gtest.h>

#include "iteration_executor_test_util.h"

namespace megasim::backend {
namespace {

using models::TaskKind;
using namespace testing;  // NOLINT(google-build-using-namespace): the workload helpers

// PP 2 x DP 2: stage 0 computes then sends (tag 1) to stage 1, which receives then computes.
models::Workload two_stage_workload() {
  models::Workload w = empty_workload(1, 2, 2);
  const std::int32_t f0 = add_task(w.stages[0], compute_task(0));
  add_task(w.stages[0], p2p_task(TaskKind::kPpSend, +1, 1, 1024, {f0}));
  const std::int32_t r1 = add_task(w.stages[1], p2p_task(TaskKind::kPpRecv, -1, 1, 1024));
  add_task(w.stages[1], compute_task(0, 1, {r1}));
  return w;
}

TaskRecord record(sim::SimTime start, sim::SimTime end) {
  return TaskRecord{start, start, end, 0};
}

TEST(MeasuredTrace, OneUnitPerRankAndTransfersStartWhenBothSidesPosted) {
  const models::Workload w = two_stage_workload();
  // Ranks 0, 1: stage 0 of replicas 0, 1; ranks 2, 3: stage 1. Replica 0's receive is posted at 5,
  // its send at 40 (so data moves from 40); replica 1's send is posted at 30, its receive at 70.
  std::vector<std::vector<TaskRecord>> records{
      {record(0, 40), record(40, 90)},
      {record(0, 30), record(30, 100)},
      {record(5, 90), record(90, 150)},
      {record(70, 100), record(100, 160)},
  };
  const Trace trace = measured_trace(w, "cuda", records);
  EXPECT_EQ(trace.backend, "cuda");
  EXPECT_EQ(trace.iteration_time, 160);
  ASSERT_EQ(trace.units.size(), 4u);
  for (std::int64_t r = 0; r < 4; ++r) {
    const TraceUnit& unit = trace.units[static_cast<std::size_t>(r)];
    EXPECT_EQ(unit.ranks, std::vector<std::int64_t>{r});
    EXPECT_EQ(unit.stage, r / 2);
    EXPECT_EQ(unit.replica, r % 2);
  }
  EXPECT_EQ(trace.units[0].records[1].transfer_start, 40);  // its own post, after the receive's
  EXPECT_EQ(trace.units[2].records[0].transfer_start, 40);  // the send's post, after its own
  EXPECT_EQ(trace.units[1].records[1].transfer_start, 70);
  EXPECT_EQ(trace.units[3].records[0].transfer_start, 70);
  // Compute keeps transfer_start = start.
  EXPECT_EQ(trace.units[2].records[1].transfer_start, 90);
}

TEST(MeasuredTrace, ATransferStartIsClampedToItsOwnRecord) {
  const models::Workload w = two_stage_workload();
  // Clocks a few microseconds apart: replica 0's send completes (end 35) before the receiver's
  // clock says it posted (50); the send's transfer_start cannot pass its end.
  std::vector<std::vector<TaskRecord>> records{
      {record(0, 30), record(30, 35)},
      {record(0, 30), record(30, 40)},
      {record(50, 60), record(60, 80)},
      {record(10, 40), record(40, 80)},
  };
  const Trace trace = measured_trace(w, "cpu", records);
  EXPECT_EQ(trace.units[0].records[1].transfer_start, 35);
  EXPECT_EQ(trace.units[2].records[0].transfer_start, 50);
}

}  // namespace
}  // namespace megasim::backend
