// `megasim calibrate --backend cpu`'s study (scenarios/studies/calibrate/cpu_calibration.h): which
// ops and collectives of the plan it measures and what it makes of the made-up probe's times
// (cpu_calibration_test_util.h), each expectation recomputed by walking the workload here.
#include "scenarios/studies/calibrate/cpu_calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/sim/fabric.h"
#include "backend/trace.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/layer_ops.h"
#include "models/op_time.h"
#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/config/calibration_file.h"
#include "scenarios/config/device.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "sim/time.h"
#include "tests/scenarios/config_error_util.h"
#include "tests/scenarios/cpu_calibration_test_util.h"

namespace megasim::scenarios {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's names

// ---------------------------------------------------------------------------------------------
// plan_products, plan_memory_ops, plan_collectives.

class PlanOps : public ::testing::TestWithParam<bool> {};  // data parallel (DP 2) or PP 2

TEST_P(PlanOps, ProductsAreTheDistinctShapesWithTheirCalls) {
  const Scenario s = load_scenario_text(tiny_scenario(GetParam()));
  const models::Workload w = workload_of(s);
  std::map<ShapeKey, std::int64_t> calls;
  std::int64_t total = 0;
  std::optional<ShapeKey> first;
  walk_ops(w, [&](const models::LayerOp& op, std::int32_t repeat) {
    if (!is_product(op)) return;
    if (!first) first = key_of(op.shape);
    calls[key_of(op.shape)] += repeat;
    total += repeat;
  });
  ASSERT_GT(total, 0);

  const std::vector<CpuOpMeasurement> products = plan_products(w);
  ASSERT_EQ(products.size(), calls.size());
  std::int64_t sum = 0;
  for (const CpuOpMeasurement& m : products) {
    const auto it = calls.find(key_of(m.shape));
    ASSERT_NE(it, calls.end()) << m.shape.m << "x" << m.shape.n << "x" << m.shape.k << " batch " << m.shape.batch;
    EXPECT_EQ(m.calls, it->second);
    EXPECT_EQ(m.bytes, 0);
    EXPECT_EQ(m.measured_s, 0);
    sum += m.calls;
  }
  EXPECT_EQ(sum, total);
  EXPECT_EQ(key_of(products.front().shape), *first);  // order of first appearance
}

TEST_P(PlanOps, MemoryOpsAreTheDistinctSizesWithTheirCalls) {
  const Scenario s = load_scenario_text(tiny_scenario(GetParam()));
  const models::Workload w = workload_of(s);
  std::map<double, std::int64_t> calls;
  std::int64_t total = 0;
  std::optional<double> first;
  walk_ops(w, [&](const models::LayerOp& op, std::int32_t repeat) {
    if (!is_memory(op)) return;
    if (!first) first = op.bytes;
    calls[op.bytes] += repeat;
    total += repeat;
  });
  ASSERT_GT(total, 0);

  const std::vector<CpuOpMeasurement> ops = plan_memory_ops(w);
  ASSERT_EQ(ops.size(), calls.size());
  std::int64_t sum = 0;
  for (const CpuOpMeasurement& m : ops) {
    const auto it = calls.find(m.bytes);
    ASSERT_NE(it, calls.end()) << m.bytes;
    EXPECT_EQ(m.calls, it->second) << m.bytes;
    EXPECT_EQ(m.shape.m, 0);
    EXPECT_EQ(m.shape.batch, 0);
    sum += m.calls;
  }
  EXPECT_EQ(sum, total);
  EXPECT_EQ(ops.front().bytes, *first);
}

TEST_P(PlanOps, DpCollectivesAreTheDistinctCallsOfTheDataGroup) {
  const bool data_parallel = GetParam();
  const models::Workload w = workload_of(load_scenario_text(tiny_scenario(data_parallel)));
  std::map<std::pair<models::CollectiveOp, double>, std::int64_t> calls;
  std::int64_t total = 0;
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kDpCollective) continue;
      ++calls[{task.op, task.bytes}];
      ++total;
    }
  }
  const std::vector<CpuCollectiveMeasurement> dp = plan_collectives(w);
  if (!data_parallel) {
    EXPECT_TRUE(dp.empty());
    return;
  }
  ASSERT_GT(total, 0);
  ASSERT_EQ(dp.size(), calls.size());
  std::int64_t sum = 0;
  for (const CpuCollectiveMeasurement& c : dp) {
    const auto it = calls.find({c.op, c.bytes});
    ASSERT_NE(it, calls.end()) << models::to_string(c.op) << " " << c.bytes;
    EXPECT_EQ(c.calls, it->second);
    sum += c.calls;
  }
  EXPECT_EQ(sum, total);
}

INSTANTIATE_TEST_SUITE_P(TinyGpt, PlanOps, ::testing::Values(false, true), plan_name);

// With tensor parallelism the kernel lists' TP calls are collectives of the plan too: counted per
// iteration as repeat x count over one rank of each stage, over a tensor group of tp members.
TEST(PlanCollectives, TensorParallelCallsCountRepeatTimesCount) {
  Scenario s = load_scenario_text(tiny_scenario(false));
  s.plan.tensor_model_parallel_size = 2;
  s.plan.pipeline_model_parallel_size = 1;
  const models::Workload w = workload_of(s);
  ASSERT_EQ(w.plan.tp, 2);
  std::int64_t expected = 0;
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kCompute) continue;
      for (const models::Task::KernelRun& run : task.runs) {
        for (const models::TpCollective& call : w.kernels[static_cast<std::size_t>(run.kernels)].tp_collectives) {
          expected += static_cast<std::int64_t>(run.repeat) * call.count;
        }
      }
    }
  }
  ASSERT_GT(expected, 0);
  std::int64_t counted = 0;
  for (const CpuCollectiveMeasurement& c : plan_collectives(w)) {
    EXPECT_EQ(c.group, models::GroupKind::kTensor);  // dp = 1: no data-parallel collective
    EXPECT_EQ(c.members, 2);
    counted += c.calls;
  }
  EXPECT_EQ(counted, expected);
}

// ---------------------------------------------------------------------------------------------
// run_cpu_calibration.

// What the report should hold, worked out from the workload and the fake's formulas.
struct Expected {
  double peak = 0;
  double memory_rate = 0;
  double plan_memory_rate = 0;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, double> gemm_efficiency;
  std::map<double, double> memory_efficiency;
};

Expected expected_compute(const models::Workload& w) {
  Expected e;
  double bytes = 0;
  double seconds = 0;
  walk_ops(w, [&](const models::LayerOp& op, std::int32_t repeat) {
    if (is_product(op)) {
      e.peak = std::max(e.peak, product_rate(op.shape));
      e.gemm_efficiency[{op.shape.m, op.shape.n, op.shape.k}] = product_rate(op.shape);
    } else if (is_memory(op)) {
      e.memory_rate = std::max(e.memory_rate, memory_rate(op.bytes));
      e.memory_efficiency[op.bytes] = memory_rate(op.bytes);
      bytes += op.bytes * repeat;
      seconds += (fake_memory_s(op.bytes) - kOverheadS) * repeat;  // the rate is of the time without the fixed cost
    }
  });
  for (auto& [shape, rate] : e.gemm_efficiency) rate /= e.peak;
  for (auto& [b, rate] : e.memory_efficiency) rate /= e.memory_rate;
  e.plan_memory_rate = bytes / seconds;
  return e;
}

TEST(CpuCalibration, Pp2ReportFollowsTheProbe) {
  const Scenario s = load_scenario_text(tiny_scenario(false));
  const models::Workload w = workload_of(s);
  const Expected e = expected_compute(w);
  // The premises of the fake: both product rates and both memory rates occur in the plan.
  ASSERT_DOUBLE_EQ(e.peak, kFastFlops);
  ASSERT_DOUBLE_EQ(e.memory_rate, kCacheRate);
  bool slow_seen = false, stream_seen = false;
  for (const auto& [shape, eff] : e.gemm_efficiency) slow_seen = slow_seen || eff == 0.5;
  for (const auto& [b, eff] : e.memory_efficiency) stream_seen = stream_seen || eff == kStreamRate / kCacheRate;
  ASSERT_TRUE(slow_seen);
  ASSERT_TRUE(stream_seen);

  const CpuCalibrationReport r = run_cpu_calibration(s, fake_probe());
  EXPECT_EQ(r.scenario, "tiny cpu gpt");
  // Peak: the fastest product's FLOP/s. Each product's rate is its FLOPs over its time.
  EXPECT_DOUBLE_EQ(r.peak_flops, kFastFlops);
  for (const CpuOpMeasurement& m : r.products) {
    EXPECT_DOUBLE_EQ(m.measured_s, fake_gemm_s(m.shape));
    EXPECT_NEAR(m.rate, product_rate(m.shape), 1e-6 * product_rate(m.shape));
  }
  // One gemm_point per (m, n, k), its rate over the peak: 1 or 0.5.
  ASSERT_EQ(r.compute.gemm_points.size(), e.gemm_efficiency.size());
  for (const models::GemmPoint& p : r.compute.gemm_points) {
    const auto it = e.gemm_efficiency.find({p.m, p.n, p.k});
    ASSERT_NE(it, e.gemm_efficiency.end()) << p.m << "x" << p.n << "x" << p.k;
    EXPECT_NEAR(p.efficiency, it->second, 1e-12) << p.m << "x" << p.n << "x" << p.k;
  }
  // Memory: the fastest op's bandwidth; points rate / fastest, sorted by bytes.
  EXPECT_DOUBLE_EQ(r.memory_bytes_per_s, kCacheRate);
  ASSERT_EQ(r.compute.memory_points.size(), e.memory_efficiency.size());
  auto expected_point = e.memory_efficiency.begin();  // std::map: ascending bytes
  for (const models::MemoryPoint& p : r.compute.memory_points) {
    EXPECT_EQ(p.bytes, expected_point->first);
    EXPECT_NEAR(p.efficiency, expected_point->second, 1e-12) << p.bytes;
    ++expected_point;
  }
  for (const CpuOpMeasurement& m : r.memory_ops) {
    EXPECT_DOUBLE_EQ(m.measured_s, fake_memory_s(m.bytes));
    EXPECT_NEAR(m.rate, memory_rate(m.bytes), 1e-6 * memory_rate(m.bytes));
  }
  // Plan-weighted: all bytes of one iteration's memory-bound ops over all their seconds.
  EXPECT_NEAR(r.plan_memory_bytes_per_s, e.plan_memory_rate, 1e-9 * e.plan_memory_rate);
  EXPECT_GT(r.plan_memory_bytes_per_s, kStreamRate);
  EXPECT_LT(r.plan_memory_bytes_per_s, kCacheRate);
  EXPECT_NEAR(r.compute.memory_efficiency, e.plan_memory_rate / kCacheRate, 1e-12);
  EXPECT_DOUBLE_EQ(r.op_overhead_s, kOverheadS);
  EXPECT_EQ(r.compute.launch_overhead_ns, 1'000);

  // No data-parallel collective at DP 1: the intra-node bandwidth is the point-to-point one.
  EXPECT_TRUE(r.collectives.empty());
  EXPECT_DOUBLE_EQ(r.intra_node_bytes_per_s, kP2pRate);

  // The device: peak and bandwidth in the file's units, memory per rank, NVLink both ways.
  EXPECT_EQ(r.device.name, "cpu: test machine");
  EXPECT_DOUBLE_EQ(r.device.peak_bf16_dense_tflops, 0.05);
  EXPECT_DOUBLE_EQ(r.device.hbm_tbytes_per_s, 0.02);
  EXPECT_DOUBLE_EQ(r.device.hbm_gbytes, 16);
  EXPECT_DOUBLE_EQ(r.device.nvlink_total_gbytes_per_s, 6);

  // The neutral curve: flat, so each point is exact for its shape.
  EXPECT_DOUBLE_EQ(r.compute.best_gemm_efficiency, 1);
  EXPECT_EQ(r.compute.sm_count, 1);
  ASSERT_EQ(r.compute.gemm_tiles.size(), 1u);
  EXPECT_EQ(r.compute.gemm_tiles[0].m, 1);
  EXPECT_EQ(r.compute.gemm_tiles[0].n, 1);
  EXPECT_DOUBLE_EQ(r.compute.gemm_k_overhead, 0);
  EXPECT_NO_THROW(models::validate(r.compute));

  // Collective latencies: the 8 KiB all-reduce less its transfer (bus factor 1 over 2 ranks) at the
  // intra-node 3 GB/s: 20 µs - 2.7307 µs = 17269 ns; a step costs the point-to-point 5 µs.
  EXPECT_EQ(r.collective.base_latency_ns, std::llround((kSmallAllReduceS - kSmallAllReduceBytes / kP2pRate) * 1e9));
  EXPECT_EQ(r.collective.base_latency_ns, 17269);
  EXPECT_EQ(r.collective.nvlink_step_latency_ns, 5000);
  EXPECT_EQ(r.collective.net_step_latency_ns, 5000);
}

// DP 2 (distributed optimizer: a reduce-scatter of the gradients, an all-gather of the parameters):
// the intra-node bandwidth is the plan-weighted bus bandwidth of the collectives that only copy,
// sum(calls x bytes x bus factor) / sum(calls x seconds) over the all-gathers; the reduction rate is
// the reducing collectives' half of their bytes over their time beyond the transfer at that
// bandwidth. Both counted here from the tasks.
TEST(CpuCalibration, Dp2IntraNodeIsTheCopyingBandwidthAndTheRestReduction) {
  const Scenario s = load_scenario_text(tiny_scenario(true));
  const models::Workload w = workload_of(s);
  double copy_bytes = 0;
  double copy_seconds = 0;
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kDpCollective || reduces(task.op)) continue;
      copy_bytes += task.bytes * dp_bus_factor(task.op);
      copy_seconds += fake_dp_s(task.op, task.bytes);
    }
  }
  ASSERT_GT(copy_seconds, 0);
  const double bandwidth = copy_bytes / copy_seconds;
  ASSERT_LT(bandwidth, kDpBusRate);  // the 10 µs latency costs something
  double reduced = 0;
  double reduction_s = 0;
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kDpCollective || !reduces(task.op)) continue;
      reduced += 0.5 * task.bytes;
      reduction_s += fake_dp_s(task.op, task.bytes) - task.bytes * dp_bus_factor(task.op) / bandwidth;
    }
  }
  ASSERT_GT(reduced, 0);
  const double reduction_rate = reduced / reduction_s;
  // Near the fake's rate: its latency and the bandwidth's share of it blur it a little.
  EXPECT_NEAR(reduction_rate, kReductionRate, 0.05 * kReductionRate);

  const CpuCalibrationReport r = run_cpu_calibration(s, fake_probe());
  ASSERT_FALSE(r.collectives.empty());
  EXPECT_TRUE(r.link_probes.empty());  // the plan has an all-gather
  for (const CpuCollectiveMeasurement& c : r.collectives) {
    EXPECT_EQ(c.group, models::GroupKind::kData);
    EXPECT_EQ(c.members, 2);
    EXPECT_DOUBLE_EQ(c.measured_s, fake_dp_s(c.op, c.bytes));
    EXPECT_NEAR(c.bus_bytes_per_s, c.bytes * dp_bus_factor(c.op) / c.measured_s, 1e-9 * kDpBusRate);
  }
  EXPECT_NEAR(r.intra_node_bytes_per_s, bandwidth, 1e-9 * bandwidth);
  EXPECT_NEAR(r.device.nvlink_total_gbytes_per_s, 2 * bandwidth / 1e9, 1e-9);
  EXPECT_NEAR(r.reduction_bytes_per_s, reduction_rate, 1e-9 * reduction_rate);
  EXPECT_NEAR(r.collective.reduction_gbytes_per_s, reduction_rate / 1e9, 1e-9);
  // The same compute rules as PP 2.
  EXPECT_DOUBLE_EQ(r.peak_flops, kFastFlops);
  EXPECT_DOUBLE_EQ(r.memory_bytes_per_s, kCacheRate);
  EXPECT_NEAR(r.plan_memory_bytes_per_s, expected_compute(w).plan_memory_rate, 1e-9 * kCacheRate);
  // The small all-reduce less its transfer at that bandwidth and its reduction of half its bytes.
  EXPECT_EQ(r.collective.base_latency_ns, std::llround((kSmallAllReduceS - kSmallAllReduceBytes / bandwidth -
                                                        0.5 * kSmallAllReduceBytes / reduction_rate) *
                                                       1e9));
}

// A plan whose collectives all reduce (DP 2 without the distributed optimizer: one all-reduce per
// bucket) gets an all-gather of each one's size measured for the link.
TEST(CpuCalibration, APlanThatOnlyReducesMeasuresAnAllGatherForTheLink) {
  Scenario s = load_scenario_text(tiny_scenario(true));
  s.plan.use_distributed_optimizer = false;
  const CpuCalibrationReport r = run_cpu_calibration(s, fake_probe());
  ASSERT_FALSE(r.collectives.empty());
  ASSERT_EQ(r.link_probes.size(), r.collectives.size());
  double bytes = 0;
  double seconds = 0;
  for (std::size_t i = 0; i < r.collectives.size(); ++i) {
    EXPECT_EQ(r.collectives[i].op, models::CollectiveOp::kAllReduce);
    EXPECT_EQ(r.link_probes[i].op, models::CollectiveOp::kAllGather);
    EXPECT_EQ(r.link_probes[i].bytes, r.collectives[i].bytes);
    EXPECT_EQ(r.link_probes[i].calls, 0);
    bytes += r.link_probes[i].bytes * dp_bus_factor(models::CollectiveOp::kAllGather);
    seconds += fake_dp_s(models::CollectiveOp::kAllGather, r.link_probes[i].bytes);
  }
  EXPECT_NEAR(r.intra_node_bytes_per_s, bytes / seconds, 1e-9 * bytes / seconds);
  EXPECT_GT(r.reduction_bytes_per_s, 0);
}

std::string thrown_key(const Scenario& s, const backend::CpuProbe& p) {
  return testing::thrown_key([&] { run_cpu_calibration(s, p); });
}

TEST(CpuCalibration, FlashAttentionIsAConfigError) {
  Scenario s = load_scenario_text(tiny_scenario(false));
  s.plan.use_flash_attention = true;
  EXPECT_THROW(run_cpu_calibration(s, fake_probe()), sim::ConfigError);
  s.plan.use_flash_attention = false;
  s.plan.attention_kernel = models::AttentionKernel::kFlashAttention1;
  EXPECT_EQ(thrown_key(s, fake_probe()), "plan.attention_kernel");
}

// A probe time that is not a positive finite number is a ConfigError naming --backend.
TEST(CpuCalibration, ABadProbeTimeIsAConfigError) {
  const Scenario pp = load_scenario_text(tiny_scenario(false));
  const Scenario dp = load_scenario_text(tiny_scenario(true));
  ASSERT_EQ(thrown_key(pp, fake_probe()), "(no error)");
  ASSERT_EQ(thrown_key(dp, fake_probe()), "(no error)");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const double bad : {0.0, -1e-3, nan, inf}) {
    backend::CpuProbe gemm = fake_probe();
    gemm.gemm_seconds = [bad](const models::GemmShape&) { return bad; };
    EXPECT_EQ(thrown_key(pp, gemm), "--backend") << "gemm " << bad;

    // Only one shape bad: still an error.
    backend::CpuProbe one_gemm = fake_probe();
    one_gemm.gemm_seconds = [bad](const models::GemmShape& shape) { return is_slow(shape) ? bad : fake_gemm_s(shape); };
    EXPECT_EQ(thrown_key(pp, one_gemm), "--backend") << "one gemm " << bad;

    backend::CpuProbe memory = fake_probe();
    memory.memory_op_seconds = [bad](double) { return bad; };
    EXPECT_EQ(thrown_key(pp, memory), "--backend") << "memory " << bad;

    backend::CpuProbe overhead = fake_probe();
    overhead.op_overhead_s = [bad] { return bad; };
    EXPECT_EQ(thrown_key(pp, overhead), "--backend") << "overhead " << bad;

    backend::CpuProbe collective = fake_probe();
    collective.collective_seconds = [bad](models::GroupKind, models::CollectiveOp, double) { return bad; };
    EXPECT_EQ(thrown_key(dp, collective), "--backend") << "collective " << bad;
  }
}

}  // namespace
}  // namespace megasim::scenarios
