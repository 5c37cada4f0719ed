// Tensor-parallel collectives: the NVLink fast path equals the CollectiveRunner on the Fabric for an
// isolated TP group and the ring formula; tp_comm_overlap hides exactly the TP time the GEMMs cover.
#include "backend/sim/tp_collective_time.h"

#include <gtest/gtest.h>

#include "backend/sim/collective_runner.h"
#include "collective_runner_test_util.h"
#include "iteration_executor_test_util.h"

namespace megasim::backend {
namespace {

using models::CollectiveOp;
using namespace testing;  // NOLINT: test helpers

constexpr double kNvLink = 300e9 * 0.8;  // bytes/s each way per GPU, default cluster and fabric

topo::Topology two_servers() {
  topo::ClusterParams c;
  c.gpus = 16;
  return topo::Topology::build(c);
}

// Flat ring of n over NVLink with C channels: each GPU's port carries one lane per channel, so a
// channel moves its per-edge bytes at 240e9 / C B/s. all-reduce: 2(n-1)/n x S per port in 2(n-1)
// steps; reduce-scatter and all-gather: (n-1)/n x S in n-1 steps.
double ring_formula_s(CollectiveOp op, std::int64_t n, double bytes, const models::CollectiveParams& p) {
  const double nd = static_cast<double>(n);
  const double factor = op == CollectiveOp::kAllReduce ? 2 * (nd - 1) / nd : (nd - 1) / nd;
  const std::int64_t steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  return sim::to_seconds(p.base_latency_ns + steps * p.nvlink_step_latency_ns) + factor * bytes / kNvLink;
}

// (5a) Fast path = fabric simulation = formula, for groups of 2, 4 and 8 GPUs of server 1 (GPUs
// 8..), several sizes and channel counts.
TEST(TpCollectiveTime, FastPathEqualsTheFabricAndTheRingFormula) {
  const topo::Topology topo = two_servers();
  const FabricParams fabric;
  for (const int channels : {1, 2, 4}) {
    models::CollectiveParams params;
    params.channels = channels;
    for (const std::int64_t n : {2, 4, 8}) {
      std::vector<topo::GpuId> gpus;
      for (std::int64_t i = 0; i < n; ++i) gpus.emplace_back(static_cast<std::int32_t>(8 + i));
      for (const CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
        for (const double bytes : {1.0 * kMiB, 37e6 + 3}) {
          const sim::SimTime fast = tp_collective_time_ns(topo, fabric, params, gpus, op, bytes);
          const CollectiveResult sim = run_one(
              topo, fabric, params, make_job(topo, op, models::CollectiveAlgorithm::kRing, bytes, gpus, params));
          const double formula = ring_formula_s(op, n, bytes, params);
          EXPECT_NEAR(sim::to_seconds(fast), sim.time_s, tolerance(sim.time_s)) << channels << " " << n << " " << bytes;
          EXPECT_NEAR(sim::to_seconds(fast), formula, tolerance(formula)) << channels << " " << n << " " << bytes;
        }
      }
    }
  }
}

// An MoE dispatch inside a server: the all-to-all sends S/n to each of the n - 1 others at once,
// so each NVLink port carries (n-1)/n x S in one step; across two servers the pairs that leave a
// server are flows on the fabric, and the fast path is not taken.
TEST(TpCollectiveTime, AllToAllInsideAServerFollowsItsFormulaAndAcrossServersUsesTheFabric) {
  const topo::Topology topo = two_servers();
  const FabricParams fabric;
  const models::CollectiveParams params;
  const double bytes = 64e6;
  for (const std::int64_t n : {2, 4, 8}) {
    std::vector<topo::GpuId> gpus;
    for (std::int64_t i = 0; i < n; ++i) gpus.emplace_back(static_cast<std::int32_t>(i));
    const double nd = static_cast<double>(n);
    const double formula =
        sim::to_seconds(params.base_latency_ns + params.nvlink_step_latency_ns) + (nd - 1) / nd * bytes / kNvLink;
    const sim::SimTime fast = tp_collective_time_ns(topo, fabric, params, gpus, CollectiveOp::kAllToAll, bytes);
    const CollectiveResult sim =
        run_one(topo, fabric, params,
                make_job(topo, CollectiveOp::kAllToAll, models::CollectiveAlgorithm::kRing, bytes, gpus, params));
    EXPECT_NEAR(sim::to_seconds(fast), formula, tolerance(formula)) << n;
    EXPECT_NEAR(sim::to_seconds(fast), sim.time_s, tolerance(sim.time_s)) << n;
  }
  std::vector<topo::GpuId> both;
  for (std::int32_t i = 0; i < 16; ++i) both.emplace_back(i);
  const sim::SimTime across = tp_collective_time_ns(topo, fabric, params, both, CollectiveOp::kAllToAll, bytes);
  const CollectiveResult sim =
      run_one(topo, fabric, params,
              make_job(topo, CollectiveOp::kAllToAll, models::CollectiveAlgorithm::kRing, bytes, both, params));
  EXPECT_EQ(across, sim.end_ns - sim.start_ns);
  // Half of every GPU's bytes leave its server through its one NIC, slower than NVLink.
  EXPECT_GT(sim::to_seconds(across), 0.5 * bytes / (200e9 / 8));
}

// A TP group of one makes no collective call.
TEST(TpCollectiveTime, GroupOfOneIsFree) {
  const topo::Topology topo = two_servers();
  const std::vector<topo::GpuId> one{topo::GpuId(3)};
  EXPECT_EQ(tp_collective_time_ns(topo, FabricParams{}, models::CollectiveParams{}, one, CollectiveOp::kAllReduce, 1e6),
            0);
}

// A group split over two servers is played on the fabric: GPUs 6, 7, 8, 9 with the hierarchical
// ring give the CollectiveRunner's time for the same job.
TEST(TpCollectiveTime, GroupAcrossServersUsesTheFabric) {
  const topo::Topology topo = two_servers();
  const std::vector<topo::GpuId> gpus{topo::GpuId(6), topo::GpuId(7), topo::GpuId(8), topo::GpuId(9)};
  const models::CollectiveParams params;
  const double bytes = 8e6;
  const sim::SimTime t = tp_collective_time_ns(topo, FabricParams{}, params, gpus, CollectiveOp::kAllReduce, bytes);
  const CollectiveResult sim =
      run_one(topo, FabricParams{}, params,
              make_job(topo, CollectiveOp::kAllReduce, models::CollectiveAlgorithm::kRing, bytes, gpus, params));
  EXPECT_EQ(t, sim.end_ns - sim.start_ns);
  EXPECT_FALSE(in_one_server(topo, gpus));
}

// (5b) One tp = 8 unit runs a kernel list 3 times: 1 ms of compute with `gemm` of GEMMs, 2 all-gathers
// and 2 reduce-scatters of 16 MiB, overlappable or not (the workload builder decides, e.g. under
// tp_comm_overlap), and one all-reduce of 4 MiB that is not.
// Not overlappable: 3 x (1 ms + 2 t_ag + 2 t_rs + t_ar). Overlappable: the 4 x t_ag (t_rs = t_ag:
// same bytes, steps and latency) hide behind the GEMMs, exposing max(0, 4 t_ag - gemm) each run
// when NCCL takes no SMs from them, and max(f x 4 t_ag, 4 t_ag - gemm) when it takes a fraction f.
Trace run_overlap_case(bool overlap, double gemm_s, double comm_sm_fraction = 0) {
  static const topo::Topology topo = two_servers();
  models::Workload w = empty_workload(8, 1, 1);
  w.plan.plan.tp_comm_overlap = overlap;
  w.plan.plan.sequence_parallel = true;
  w.kernels.resize(1);
  auto& tp = w.kernels[0].tp_collectives;
  tp.push_back({CollectiveOp::kAllGather, 16 * kMiB, 2, overlap});
  tp.push_back({CollectiveOp::kReduceScatter, 16 * kMiB, 2, overlap});
  tp.push_back({CollectiveOp::kAllReduce, 4 * kMiB, 1, false});
  add_task(w.stages[0], compute_task(0, 3));
  IterationInputs in = make_inputs(w, topo, first_gpus(8), {{1 * kMs, gemm_s}});
  in.calibration.comm_sm_fraction = comm_sm_fraction;
  return simulate_iteration(in);
}

TEST(TpCollectiveTime, OverlapHidesTheTpTimeTheGemmsCover) {
  const models::CollectiveParams p;
  const double t_ag = ring_formula_s(CollectiveOp::kAllGather, 8, 16 * kMiB, p);
  const double t_ar = ring_formula_s(CollectiveOp::kAllReduce, 8, 4 * kMiB, p);
  const double exposed_plain = 4 * t_ag + t_ar;
  const Trace plain = run_overlap_case(false, 0.8 * kMs);
  EXPECT_NEAR(static_cast<double>(plain.iteration_time), 3 * (1 * kMs + exposed_plain) * 1e9, 3 * 5 + 1);
  EXPECT_NEAR(static_cast<double>(plain.units[0].records[0].tp_exposed), 3 * exposed_plain * 1e9, 3 * 5 + 1);
  // 4 t_ag is about 0.31 ms < 0.8 ms of GEMMs: all of it is hidden.
  ASSERT_LT(4 * t_ag, 0.8 * kMs);
  const Trace hidden = run_overlap_case(true, 0.8 * kMs);
  EXPECT_NEAR(static_cast<double>(plain.iteration_time - hidden.iteration_time), 3 * 4 * t_ag * 1e9, 3 * 5 + 1);
  EXPECT_NEAR(static_cast<double>(hidden.units[0].records[0].tp_exposed), 3 * t_ar * 1e9, 3 * 5 + 1);
  // With 0.1 ms of GEMMs only that much is hidden per run.
  const Trace partial = run_overlap_case(true, 0.1 * kMs);
  EXPECT_NEAR(static_cast<double>(plain.iteration_time - partial.iteration_time), 3 * 0.1 * kMs * 1e9, 3 * 5 + 1);
}

// NCCL's kernels hold a fraction f of the SMs while they run (24 of the A100's 108), slowing the
// GEMMs beside them: the overlapped list costs max(f x C, C - W) on top of its compute.
TEST(TpCollectiveTime, OverlappedCollectivesSlowTheGemmsBesideThem) {
  const models::CollectiveParams p;
  const double f = 24.0 / 108;
  const double c = 4 * ring_formula_s(CollectiveOp::kAllGather, 8, 16 * kMiB, p);
  const double t_ar = ring_formula_s(CollectiveOp::kAllReduce, 8, 4 * kMiB, p);
  // Long GEMMs (C (1 - f) < W): the GEMMs finish f x C later; the collectives stay hidden.
  const Trace slowed = run_overlap_case(true, 0.8 * kMs, f);
  EXPECT_NEAR(static_cast<double>(slowed.iteration_time), 3 * (1 * kMs + f * c + t_ar) * 1e9, 3 * 5 + 1);
  EXPECT_NEAR(static_cast<double>(slowed.units[0].records[0].tp_exposed), 3 * (f * c + t_ar) * 1e9, 3 * 5 + 1);
  // Short GEMMs (C (1 - f) > W): they end inside the collectives, which set the pace: C - W exposed.
  ASSERT_GT(c * (1 - f), 0.1 * kMs);
  const Trace partial = run_overlap_case(true, 0.1 * kMs, f);
  EXPECT_NEAR(static_cast<double>(partial.iteration_time), 3 * (1 * kMs + (c - 0.1 * kMs) + t_ar) * 1e9, 3 * 5 + 1);
  // Without overlap nothing changes: the collectives run alone, the GEMMs at full speed.
  const Trace plain = run_overlap_case(false, 0.8 * kMs, f);
  EXPECT_EQ(plain.iteration_time, run_overlap_case(false, 0.8 * kMs).iteration_time);
}

// Ring attention's K/V transfers (OverlapWindow::kAttention) hide behind the attention blocks
// beside them (KernelTime::ring_attention_s, W), not behind the GEMMs: 4 all-gathers of 16 MiB (C
// in all) cost max(f x C, C - W) per run whatever the GEMMs' time, and all of C with W = 0.
Trace run_ring_case(double gemm_s, double ring_attention_s, double comm_sm_fraction) {
  static const topo::Topology topo = two_servers();
  models::Workload w = empty_workload(8, 1, 1);
  w.kernels.resize(1);
  models::TpCollective ring{CollectiveOp::kAllGather, 16 * kMiB, 4, true};
  ring.window = models::OverlapWindow::kAttention;
  w.kernels[0].tp_collectives.push_back(ring);
  add_task(w.stages[0], compute_task(0, 3));
  IterationInputs in = make_inputs(w, topo, first_gpus(8), {{1 * kMs, gemm_s, ring_attention_s}});
  in.calibration.comm_sm_fraction = comm_sm_fraction;
  return simulate_iteration(in);
}

TEST(TpCollectiveTime, RingAttentionTransfersHideBehindTheAttentionBlocks) {
  const models::CollectiveParams p;
  const double c = 4 * ring_formula_s(CollectiveOp::kAllGather, 8, 16 * kMiB, p);
  const double f = 24.0 / 108;
  const auto exposed_s = [](const Trace& t) { return static_cast<double>(t.units[0].records[0].tp_exposed) * 1e-9; };
  // Long attention (C (1 - f) < W): f x C per run, GEMMs long or absent.
  ASSERT_LT(c * (1 - f), 0.8 * kMs);
  EXPECT_NEAR(exposed_s(run_ring_case(0, 0.8 * kMs, f)), 3 * f * c, 3 * 5e-9);
  EXPECT_NEAR(exposed_s(run_ring_case(0.9 * kMs, 0.8 * kMs, f)), 3 * f * c, 3 * 5e-9);
  // Short attention: C - W.
  ASSERT_GT(c * (1 - f), 0.1 * kMs);
  EXPECT_NEAR(exposed_s(run_ring_case(0.9 * kMs, 0.1 * kMs, f)), 3 * (c - 0.1 * kMs), 3 * 5e-9);
  // No attention beside them: all of it, even behind long GEMMs.
  EXPECT_NEAR(exposed_s(run_ring_case(0.9 * kMs, 0, f)), 3 * c, 3 * 5e-9);
}

}  // namespace
}  // namespace megasim::backend
