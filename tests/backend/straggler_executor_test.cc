// The executor's straggler inputs (iteration_executor.h): per-task compute scales and pauses, with
// expected times worked out by hand.
#include <gtest/gtest.h>

#include "backend/sim/iteration_executor.h"
#include "iteration_executor_test_util.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

using namespace testing;  // NOLINT: test helpers

topo::Topology one_server() {
  topo::ClusterParams c;
  c.gpus = 8;
  return topo::Topology::build(c);
}

// One rank, one compute task of 10 ms.
models::Workload one_task() {
  models::Workload w = empty_workload(1, 1, 1);
  w.kernels.resize(1);
  add_task(w.stages[0], compute_task(0, 1));
  return w;
}

TEST(StragglerExecutor, PausesLengthenTheComputeTheyFallIn) {
  const models::Workload w = one_task();
  const topo::Topology topo = one_server();
  IterationInputs in = make_inputs(w, topo, first_gpus(1), {{10 * kMs, 0}});
  in.gc_period = 4'000'000;
  in.gc_pause = 1'000'000;
  // Pauses at 0, 4, 8 and 12 ms: 10 ms of work fits in [1, 4) + [5, 8) + [9, 12) + [13, 14).
  in.gc_phase = {0};
  EXPECT_EQ(simulate_iteration(in).iteration_time, 14'000'000);
  // Pauses at 2.5, 6.5 and 10.5 ms: [0, 2.5) + [3.5, 6.5) + [7.5, 10.5) + [11.5, 13).
  in.gc_phase = {2'500'000};
  EXPECT_EQ(simulate_iteration(in).iteration_time, 13'000'000);
  // No pauses: the task alone.
  in.gc_period = 0;
  EXPECT_EQ(simulate_iteration(in).iteration_time, 10'000'000);
}

TEST(StragglerExecutor, ATpGroupWaitsForEachOfItsRanksPauses) {
  models::Workload w = empty_workload(2, 1, 1);
  w.kernels.resize(1);
  add_task(w.stages[0], compute_task(0, 1));
  const topo::Topology topo = one_server();
  IterationInputs in = make_inputs(w, topo, first_gpus(2), {{51 * kMs, 0}});
  in.gc_period = 100'000'000;
  in.gc_pause = 10'000'000;
  // Rank 0 pauses at 20 ms, rank 1 at 60 ms: 51 ms of work meets both, 71 ms in all.
  in.gc_phase = {20'000'000, 60'000'000};
  EXPECT_EQ(simulate_iteration(in).iteration_time, 71'000'000);
  // Pauses that overlap cost their union: [20, 35).
  in.gc_phase = {20'000'000, 25'000'000};
  EXPECT_EQ(simulate_iteration(in).iteration_time, 66'000'000);
  // One phase for the unit: its ranks pause together.
  in.gc_phase = {20'000'000};
  EXPECT_EQ(simulate_iteration(in).iteration_time, 61'000'000);
}

TEST(StragglerExecutor, ATaskStartingInsideAPauseWaitsForItsRest) {
  models::Workload w = empty_workload(1, 1, 1);
  w.kernels.resize(1);
  add_task(w.stages[0], compute_task(0, 1));
  add_task(w.stages[0], compute_task(0, 1, {0}));
  const topo::Topology topo = one_server();
  IterationInputs in = make_inputs(w, topo, first_gpus(1), {{3 * kMs, 0}});
  // One pause at 2.5 ms of 1 ms every 100 ms: the first task runs [0, 2.5) + [3.5, 4); the second
  // starts at 4 ms, after the pause, and takes its 3 ms.
  in.gc_period = 100'000'000;
  in.gc_pause = 1'000'000;
  in.gc_phase = {2'500'000};
  const Trace trace = simulate_iteration(in);
  EXPECT_EQ(trace.units[0].records[0].end, 4'000'000);
  EXPECT_EQ(trace.iteration_time, 7'000'000);
}

TEST(StragglerExecutor, TaskScalesMultiplyTheirTasksCompute) {
  models::Workload w = empty_workload(1, 1, 1);
  w.kernels.resize(1);
  add_task(w.stages[0], compute_task(0, 2));
  add_task(w.stages[0], compute_task(0, 1, {0}));
  const topo::Topology topo = one_server();
  IterationInputs in = make_inputs(w, topo, first_gpus(1), {{1 * kMs, 0}});
  in.task_scale = {{1.5f, 0.5f}};
  // 2 x 1 ms x 1.5 + 1 ms x 0.5.
  EXPECT_EQ(simulate_iteration(in).iteration_time, 3'500'000);
  in.gpu_slowdown.assign(static_cast<std::size_t>(topo.num_gpus()), 1.0);
  in.gpu_slowdown[0] = 2.0;  // with the GPU's slowdown on top
  EXPECT_EQ(simulate_iteration(in).iteration_time, 7'000'000);
}

// Two stages on two servers (GPU 0 and GPU 8): compute 1 ms, send 24 MB, compute 1 ms. The NIC
// carries 200 Gb/s x 0.96 = 24 GB/s, so the transfer takes 1 ms plus the path latency; with the
// sender's NIC at half speed it takes 2 ms plus the same latency: the iteration grows by 1 ms.
TEST(StragglerExecutor, ADegradedNicSlowsTheTransfersOnIt) {
  models::Workload w = empty_workload(1, 2, 1);
  w.kernels.resize(1);
  const std::int32_t f = add_task(w.stages[0], compute_task(0, 1));
  add_task(w.stages[0], p2p_task(models::TaskKind::kPpSend, +1, 0, 24e6, {f}));
  const std::int32_t r = add_task(w.stages[1], p2p_task(models::TaskKind::kPpRecv, -1, 0, 24e6));
  add_task(w.stages[1], compute_task(0, 1, {r}));
  topo::ClusterParams c;
  c.gpus = 16;
  const topo::Topology topo = topo::Topology::build(c);
  IterationInputs in = make_inputs(w, topo, placement_of({0, 8}), {{1 * kMs, 0}});
  const sim::SimTime nominal = simulate_iteration(in).iteration_time;
  in.degraded_links = {{topo.nic_up(topo::GpuId(0)), 0.5}};
  EXPECT_NEAR(static_cast<double>(simulate_iteration(in).iteration_time - nominal), 1e6, 2);
  in.degraded_links = {{topo.nic_up(topo::GpuId(0)), 1.5}};
  EXPECT_THROW(static_cast<void>(simulate_iteration(in)), sim::ConfigError);
}

TEST(StragglerExecutor, MalformedStragglerInputsNameTheirKey) {
  const models::Workload w = one_task();
  const topo::Topology topo = one_server();
  const auto key_of = [&](const IterationInputs& in) -> std::string {
    try {
      static_cast<void>(simulate_iteration(in));
    } catch (const sim::ConfigError& e) {
      return e.key();
    }
    return "accepted";
  };
  IterationInputs in = make_inputs(w, topo, first_gpus(1), {{1 * kMs, 0}});
  in.task_scale = {{1.0f, 1.0f}};  // two factors for a one-task stage
  EXPECT_EQ(key_of(in), "stragglers.task_scale");
  in.task_scale = {{0.0f}};
  EXPECT_EQ(key_of(in), "stragglers.task_scale");
  in.task_scale = {};
  in.gc_period = 1'000'000;
  in.gc_pause = 100'000;
  in.gc_phase = {};  // no phase for the unit
  EXPECT_EQ(key_of(in), "stragglers.gc_period_s");
  in.gc_phase = {1'000'000};  // not inside the period
  EXPECT_EQ(key_of(in), "stragglers.gc_period_s");
  in.gc_phase = {0, 0};  // two phases for a unit of one rank
  EXPECT_EQ(key_of(in), "stragglers.gc_period_s");
  in.gc_phase = {0};
  in.gc_pause = 1'000'000;  // as long as the period
  EXPECT_EQ(key_of(in), "stragglers.gc_period_s");
}

}  // namespace
}  // namespace megasim::backend
