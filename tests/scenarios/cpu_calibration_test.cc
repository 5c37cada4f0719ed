// `megasim calibrate --backend cpu`'s study (scenarios/cpu_calibration.h) with a made-up probe
// whose every time follows from a formula written here, on a tiny GPT run as PP 2 or DP 2 over two
// ranks of one server. The expected values are recomputed by walking the workload in the test, and
// the end-to-end tests check that the simulator, given the calibration file the study writes,
// reproduces the probe's times. Also: the [compute] memory_points of calibration files.
#include "scenarios/cpu_calibration.h"

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
#include "scenarios/calibration_file.h"
#include "scenarios/device.h"
#include "scenarios/loader.h"
#include "scenarios/run_study.h"
#include "sim/error.h"
#include "sim/time.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

// ---------------------------------------------------------------------------------------------
// The tiny GPT: 2 layers, hidden 256, 4 heads (head dim 64), sequence 128, vocabulary 2048, unfused
// attention, 4 micro-batches of 1, on two ranks of one server.

std::string tiny_scenario(bool data_parallel, const std::string& calibration_file = "") {
  std::string text = R"([simulation]
name = "tiny cpu gpt"
[cluster]
gpu = "calibrated"
gpus = 2
gpus_per_server = 2
rails = 2
[model]
num_layers = 2
hidden_size = 256
num_attention_heads = 4
seq_length = 128
vocab_size = 2048
make_vocab_size_divisible_by = 128
[plan]
tensor_model_parallel_size = 1
)";
  text += data_parallel ? "pipeline_model_parallel_size = 1\nuse_distributed_optimizer = true\n"
                        : "pipeline_model_parallel_size = 2\nuse_distributed_optimizer = false\n";
  text += R"(num_layers_per_virtual_pipeline_stage = 0
sequence_parallel = false
micro_batch_size = 1
global_batch_size = 4
recompute_granularity = "none"
use_flash_attention = false
)";
  if (!calibration_file.empty()) text += "[calibration]\nfile = \"" + calibration_file + "\"\n";
  return text;
}

models::Workload workload_of(const Scenario& s) {
  return models::build_workload(s.model,
                                models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server));
}

// ---------------------------------------------------------------------------------------------
// The made-up machine.
//  - products: 50 GFLOP/s, except the attention score shape (m = n = seq 128, k = head dim 64, and
//    the same shape of the backward's dprobs), which runs at 25 GFLOP/s;
//  - memory-bound ops: 20 GB/s below 256 KiB (in cache), 8 GB/s from 256 KiB on;
//  - 20 µs of fixed cost per op;
//  - a data-parallel collective over 2 ranks: bytes × bus factor / 2 GB/s + 10 µs (bus factors
//    written out here: all-reduce 2(n-1)/n = 1, reduce-scatter and all-gather (n-1)/n = 0.5);
//  - point-to-point 3 GB/s and 5 µs; an 8 KiB all-reduce in 20 µs.

constexpr double kFastFlops = 50e9;
constexpr double kSlowFlops = 25e9;
constexpr double kCacheBytes = 256.0 * 1024;
constexpr double kCacheRate = 20e9;
constexpr double kStreamRate = 8e9;
constexpr double kOverheadS = 1e-6;  // well under the smallest op, so no time is clamped
constexpr double kDpBusRate = 2e9;
constexpr double kDpLatencyS = 1e-5;
constexpr double kReductionRate = 4e9;
constexpr double kP2pRate = 3e9;
constexpr double kP2pLatencyS = 5e-6;
constexpr double kSmallAllReduceBytes = 8192;
constexpr double kSmallAllReduceS = 20e-6;

bool is_slow(const models::GemmShape& s) {
  return s.m == 128 && s.n == 128 && s.k == 64;
}
double product_rate(const models::GemmShape& s) {
  return is_slow(s) ? kSlowFlops : kFastFlops;
}
double flops_of(const models::GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}
// As the real probe does, a measured op time includes the fixed cost of an op.
double fake_gemm_s(const models::GemmShape& s) {
  return flops_of(s) / product_rate(s) + kOverheadS;
}
double memory_rate(double bytes) {
  return bytes < kCacheBytes ? kCacheRate : kStreamRate;
}
double fake_memory_s(double bytes) {
  return bytes / memory_rate(bytes) + kOverheadS;
}
double dp_bus_factor(models::CollectiveOp op) {
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      return 1.0;
    case models::CollectiveOp::kReduceScatter:
    case models::CollectiveOp::kAllGather:
      return 0.5;
    default:
      ADD_FAILURE() << "a data-parallel collective the fake does not expect";
      return 1.0;
  }
}
bool reduces(models::CollectiveOp op) {
  return op == models::CollectiveOp::kAllReduce || op == models::CollectiveOp::kReduceScatter;
}
// Over 2 members: the transfer at the bus rate, a fixed latency, and for a reducing collective the
// combining of the half it receives at kReductionRate.
double fake_dp_s(models::CollectiveOp op, double bytes) {
  return bytes * dp_bus_factor(op) / kDpBusRate + kDpLatencyS + (reduces(op) ? 0.5 * bytes / kReductionRate : 0.0);
}

CpuCalibrationProbe fake_probe() {
  CpuCalibrationProbe p;
  p.device = "cpu: test machine";
  p.memory_gbytes_per_rank = 16;
  p.gemm_seconds = fake_gemm_s;
  p.memory_op_seconds = fake_memory_s;
  p.op_overhead_s = [] { return kOverheadS; };
  p.collective_seconds = [](models::GroupKind group, models::CollectiveOp op, double bytes) {
    EXPECT_EQ(group, models::GroupKind::kData) << "the tiny plans have no tensor parallelism";
    return fake_dp_s(op, bytes);
  };
  p.links.ranks = 2;
  p.links.p2p_latency_s = kP2pLatencyS;
  p.links.p2p_bytes_per_s = kP2pRate;
  p.links.allreduce_small_bytes = kSmallAllReduceBytes;
  p.links.allreduce_small_s = kSmallAllReduceS;
  return p;
}

bool is_product(const models::LayerOp& op) {
  return op.kind == models::OpKind::kGemm || op.kind == models::OpKind::kAttention;
}
bool is_memory(const models::LayerOp& op) {
  return op.kind == models::OpKind::kElementwise || op.kind == models::OpKind::kNorm;
}

// Every op occurrence of one iteration on one rank of each stage, with its repeat count.
template <typename Visit>
void walk_ops(const models::Workload& w, Visit visit) {
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kCompute) continue;
      for (const models::Task::KernelRun& run : task.runs) {
        for (const models::LayerOp& op : w.kernels.at(static_cast<std::size_t>(run.kernels)).ops) visit(op, run.repeat);
      }
    }
  }
}

using ShapeKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
ShapeKey key_of(const models::GemmShape& s) {
  return {s.m, s.n, s.k, s.batch};
}

// ---------------------------------------------------------------------------------------------
// bus_factor, plan_products, plan_memory_ops, plan_collectives.

TEST(CpuCalibration, BusFactorsAreNcclTests) {
  using models::CollectiveOp;
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::kBroadcast, 8), 1.0);
}

std::string plan_name(const ::testing::TestParamInfo<bool>& param) {
  return param.param ? "Dp2" : "Pp2";
}

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

// DP 2: the intra-node bandwidth is the plan-weighted bus bandwidth of the data-parallel
// collectives, sum(calls × bytes × bus factor) / sum(calls × seconds), counted here from the tasks.
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

std::string thrown_key(const Scenario& s, const CpuCalibrationProbe& p) {
  return testing::thrown_key([&] { run_cpu_calibration(s, p); });
}

TEST(CpuCalibration, FlashAttentionIsAConfigError) {
  Scenario s = load_scenario_text(tiny_scenario(false));
  s.plan.use_flash_attention = true;
  EXPECT_THROW(run_cpu_calibration(s, fake_probe()), sim::ConfigError);
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
    CpuCalibrationProbe gemm = fake_probe();
    gemm.gemm_seconds = [bad](const models::GemmShape&) { return bad; };
    EXPECT_EQ(thrown_key(pp, gemm), "--backend") << "gemm " << bad;

    // Only one shape bad: still an error.
    CpuCalibrationProbe one_gemm = fake_probe();
    one_gemm.gemm_seconds = [bad](const models::GemmShape& shape) { return is_slow(shape) ? bad : fake_gemm_s(shape); };
    EXPECT_EQ(thrown_key(pp, one_gemm), "--backend") << "one gemm " << bad;

    CpuCalibrationProbe memory = fake_probe();
    memory.memory_op_seconds = [bad](double) { return bad; };
    EXPECT_EQ(thrown_key(pp, memory), "--backend") << "memory " << bad;

    CpuCalibrationProbe overhead = fake_probe();
    overhead.op_overhead_s = [bad] { return bad; };
    EXPECT_EQ(thrown_key(pp, overhead), "--backend") << "overhead " << bad;

    CpuCalibrationProbe collective = fake_probe();
    collective.collective_seconds = [bad](models::GroupKind, models::CollectiveOp, double) { return bad; };
    EXPECT_EQ(thrown_key(dp, collective), "--backend") << "collective " << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// The file: to_calibration_toml read back by calibration_file.h.

class RoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(RoundTrip, TheFileGivesBackTheReport) {
  const CpuCalibrationReport r = run_cpu_calibration(load_scenario_text(tiny_scenario(GetParam())), fake_probe());
  const std::string toml = to_calibration_toml(r);
  models::ComputeCalibration c = calibrated_device_defaults();
  backend::FabricParams fabric;
  fabric.nvlink_efficiency = 0.5;
  models::CollectiveParams collective;
  ASSERT_NO_THROW(apply_calibration_text(toml, "cal.toml", c, fabric, &collective)) << toml;

  EXPECT_DOUBLE_EQ(c.best_gemm_efficiency, r.compute.best_gemm_efficiency);
  EXPECT_EQ(c.sm_count, r.compute.sm_count);
  EXPECT_DOUBLE_EQ(c.gemm_k_overhead, r.compute.gemm_k_overhead);
  EXPECT_NEAR(c.memory_efficiency, r.compute.memory_efficiency, 5e-5);  // printed with 4 decimals
  EXPECT_EQ(c.launch_overhead_ns, r.compute.launch_overhead_ns);
  ASSERT_EQ(c.gemm_points.size(), r.compute.gemm_points.size());
  for (std::size_t i = 0; i < c.gemm_points.size(); ++i) {
    EXPECT_EQ(c.gemm_points[i].m, r.compute.gemm_points[i].m);
    EXPECT_EQ(c.gemm_points[i].n, r.compute.gemm_points[i].n);
    EXPECT_EQ(c.gemm_points[i].k, r.compute.gemm_points[i].k);
    EXPECT_NEAR(c.gemm_points[i].efficiency, r.compute.gemm_points[i].efficiency, 5e-5);
  }
  ASSERT_EQ(c.memory_points.size(), r.compute.memory_points.size());
  for (std::size_t i = 0; i < c.memory_points.size(); ++i) {
    EXPECT_NEAR(c.memory_points[i].bytes, r.compute.memory_points[i].bytes, 0.5);
    EXPECT_NEAR(c.memory_points[i].efficiency, r.compute.memory_points[i].efficiency, 5e-5);
  }
  EXPECT_DOUBLE_EQ(fabric.nvlink_efficiency, 1.0);
  EXPECT_EQ(collective.base_latency_ns, r.collective.base_latency_ns);
  EXPECT_EQ(collective.nvlink_step_latency_ns, r.collective.nvlink_step_latency_ns);
  EXPECT_EQ(collective.net_step_latency_ns, r.collective.net_step_latency_ns);

  const std::optional<models::GpuSpec> device = calibration_device_text(toml, "cal.toml");
  ASSERT_TRUE(device.has_value());
  EXPECT_EQ(device->name, r.device.name);
  // Printed with 6 significant digits.
  EXPECT_NEAR(device->peak_bf16_dense_tflops, r.device.peak_bf16_dense_tflops, 5e-6 * r.device.peak_bf16_dense_tflops);
  EXPECT_NEAR(device->hbm_tbytes_per_s, r.device.hbm_tbytes_per_s, 5e-6 * r.device.hbm_tbytes_per_s);
  EXPECT_NEAR(device->hbm_gbytes, r.device.hbm_gbytes, 5e-4 * r.device.hbm_gbytes);
  // The file's intra_node_gbytes_per_s is one direction: nvlink_total / 2.
  EXPECT_NEAR(device->nvlink_total_gbytes_per_s, r.device.nvlink_total_gbytes_per_s,
              5e-6 * r.device.nvlink_total_gbytes_per_s);
  EXPECT_NEAR(device->nvlink_total_gbytes_per_s / 2, r.intra_node_bytes_per_s / 1e9,
              5e-6 * r.intra_node_bytes_per_s / 1e9);
}

INSTANTIATE_TEST_SUITE_P(TinyGpt, RoundTrip, ::testing::Values(false, true), plan_name);

// The number after `"key": ` in pretty-printed JSON.
double json_number(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no key " << key;
    return std::nan("");
  }
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

TEST(CpuCalibration, TextAndJsonCarryTheMeasurements) {
  const CpuCalibrationReport r = run_cpu_calibration(load_scenario_text(tiny_scenario(true)), fake_probe());
  const std::string json = to_json(r);
  EXPECT_NE(json.find("\"backend\": \"cpu\""), std::string::npos);
  EXPECT_NE(json.find("\"device\": \"cpu: test machine\""), std::string::npos);
  EXPECT_NE(json.find("\"scenario\": \"tiny cpu gpt\""), std::string::npos);
  EXPECT_DOUBLE_EQ(json_number(json, "ranks"), 2.0);
  EXPECT_DOUBLE_EQ(json_number(json, "peak_flops"), kFastFlops);
  EXPECT_DOUBLE_EQ(json_number(json, "memory_bytes_per_s"), kCacheRate);
  EXPECT_DOUBLE_EQ(json_number(json, "plan_memory_bytes_per_s"), r.plan_memory_bytes_per_s);
  EXPECT_DOUBLE_EQ(json_number(json, "op_overhead_s"), kOverheadS);
  EXPECT_DOUBLE_EQ(json_number(json, "p2p_latency_s"), kP2pLatencyS);
  EXPECT_DOUBLE_EQ(json_number(json, "p2p_bytes_per_s"), kP2pRate);
  EXPECT_DOUBLE_EQ(json_number(json, "intra_node_bytes_per_s"), r.intra_node_bytes_per_s);
  for (const char* key : {"\"products\": [", "\"collectives\": [", "\"memory_ops\": ["}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  // One "flops_per_s" per product, one "bus_bytes_per_s" per collective.
  std::size_t products = 0;
  for (std::size_t at = json.find("\"flops_per_s\""); at != std::string::npos;
       at = json.find("\"flops_per_s\"", at + 1)) {
    ++products;
  }
  EXPECT_EQ(products, r.products.size());
  EXPECT_EQ(json.back(), '\n');

  const std::string text = to_text(r);
  EXPECT_NE(text.find("cpu: test machine"), std::string::npos);
  EXPECT_NE(text.find("peak (fastest product)     50.00 GFLOP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("fastest 20.00 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("op overhead                1.000 us"), std::string::npos) << text;
  EXPECT_NE(text.find("(the plan's copying collectives)"), std::string::npos) << text;
  EXPECT_NE(text.find("reductions                 "), std::string::npos) << text;
  EXPECT_NE(text.find("dp     reduce_scatter"), std::string::npos) << text;
  const std::string pp_text = to_text(run_cpu_calibration(load_scenario_text(tiny_scenario(false)), fake_probe()));
  EXPECT_NE(pp_text.find("intra-node bandwidth       3.00 GB/s (point-to-point)"), std::string::npos) << pp_text;
}

// ---------------------------------------------------------------------------------------------
// End to end: the simulator on the calibrated device reproduces the probe.

std::filesystem::path temp_dir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("megasim_cpu_calibration_test_" + name);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

// A scenario on the device the fake probe describes, through the file to_calibration_toml writes.
Scenario calibrated(bool data_parallel, const std::string& name) {
  const std::filesystem::path dir = temp_dir(name);
  const CpuCalibrationReport r = run_cpu_calibration(load_scenario_text(tiny_scenario(data_parallel)), fake_probe());
  write_file(dir / "cal.toml", to_calibration_toml(r));
  return load_scenario_file(write_file(dir / "scenario.toml", tiny_scenario(data_parallel, "cal.toml")));
}

// The probe's time for one op as the simulator should charge it: its measured time (the rate the
// file carries is of the time without the fixed cost, which the file's launch overhead adds back).
double probe_op_s(const models::LayerOp& op) {
  return is_product(op) ? fake_gemm_s(op.shape) : fake_memory_s(op.bytes);
}

class EndToEnd : public ::testing::TestWithParam<bool> {};

// Op by op, the cost model on the file's device (device_model) charges each op the probe's time.
// Every product is compute-bound there: its bytes at the slowest point (8 GB/s) take less than its
// FLOPs at its own rate.
TEST_P(EndToEnd, CostModelChargesEachOpTheProbesTime) {
  const std::string dir = GetParam() ? "ops_dp2" : "ops_pp2";
  const Scenario s = calibrated(GetParam(), dir);
  const DeviceModel d = device_model(s);
  const models::Workload w = workload_of(s);
  std::set<std::tuple<std::string, ShapeKey, double>> seen;  // each distinct op once
  walk_ops(w, [&](const models::LayerOp& op, std::int32_t) {
    if (!seen.insert({op.name, key_of(op.shape), op.bytes}).second) return;
    if (is_product(op)) {
      ASSERT_LT(models::gemm_bytes(op.shape) / kStreamRate, fake_gemm_s(op.shape)) << op.name;
    }
    const double expected = probe_op_s(op);
    EXPECT_NEAR(models::op_time_s(op, w.plan.plan, d.gpu, d.compute), expected, 1e-3 * expected)
        << op.name << (is_product(op) ? " (product): probe " : " (memory-bound): probe ")
        << (is_product(op) ? fake_gemm_s(op.shape) : fake_memory_s(op.bytes)) << " s, fixed cost " << kOverheadS
        << " s";
  });
  std::filesystem::remove_all(temp_dir(dir));
}

// Each compute task of the simulated iteration lasts the probe's times summed over its kernel runs.
TEST_P(EndToEnd, IterationComputeTasksLastTheProbesTimes) {
  const Scenario s = calibrated(GetParam(), GetParam() ? "iteration_dp2" : "iteration_pp2");
  ASSERT_EQ(s.gpu, kCalibratedGpu);
  const RunResult run = run_iteration_study(s);
  ASSERT_EQ(run.trace.units.size(), 2u);
  int checked = 0;
  for (const backend::TraceUnit& unit : run.trace.units) {
    const models::StageProgram& program = run.workload.stages.at(static_cast<std::size_t>(unit.stage));
    ASSERT_EQ(unit.records.size(), program.tasks.size());
    for (std::size_t t = 0; t < program.tasks.size(); ++t) {
      const models::Task& task = program.tasks[t];
      if (task.kind != models::TaskKind::kCompute) continue;
      double expected = 0;
      double products = 0;  // of which products, and how many
      int product_ops = 0;
      int ops = 0;
      for (const models::Task::KernelRun& kernel_run : task.runs) {
        for (const models::LayerOp& op : run.workload.kernels.at(static_cast<std::size_t>(kernel_run.kernels)).ops) {
          expected += kernel_run.repeat * probe_op_s(op);
          ops += kernel_run.repeat;
          if (is_product(op)) {
            products += kernel_run.repeat * fake_gemm_s(op.shape);
            product_ops += kernel_run.repeat;
          }
        }
      }
      const double simulated = sim::to_seconds(unit.records[t].end - unit.records[t].start);
      EXPECT_NEAR(simulated, expected, 1e-3 * expected + 1e-9 * (ops + 1))
          << "stage " << unit.stage << " task " << t << " (" << models::to_string(task.category) << "): " << ops
          << " ops of which " << product_ops << " products (" << products
          << " s at the probe's times); the difference is " << (simulated - expected) / kOverheadS << " op fixed costs";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  std::filesystem::remove_all(temp_dir(GetParam() ? "iteration_dp2" : "iteration_pp2"));
}

INSTANTIATE_TEST_SUITE_P(TinyGpt, EndToEnd, ::testing::Values(false, true), plan_name);

// ---------------------------------------------------------------------------------------------
// [compute] memory_points in calibration files.

std::string apply_key(const std::string& text, models::ComputeCalibration* out = nullptr) {
  models::ComputeCalibration c = calibrated_device_defaults();
  backend::FabricParams f;
  try {
    apply_calibration_text(text, "test.toml", c, f);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  if (out != nullptr) *out = c;
  return "(no error)";
}

TEST(CalibrationFileMemoryPoints, ParsesTheList) {
  models::ComputeCalibration c;
  ASSERT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, efficiency = 1.0 },\n"
                      "  { bytes = 1048576.5, efficiency = 0.4 }, { efficiency = 0.25, bytes = 1e9 } ]\n",
                      &c),
            "(no error)");
  ASSERT_EQ(c.memory_points.size(), 3u);
  EXPECT_DOUBLE_EQ(c.memory_points[0].bytes, 1024);  // an integer is a number of bytes too
  EXPECT_DOUBLE_EQ(c.memory_points[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(c.memory_points[1].bytes, 1048576.5);
  EXPECT_DOUBLE_EQ(c.memory_points[1].efficiency, 0.4);
  EXPECT_DOUBLE_EQ(c.memory_points[2].bytes, 1e9);
  EXPECT_DOUBLE_EQ(c.memory_points[2].efficiency, 0.25);
  // The parsed points drive the cost model: half way in log between 1 KiB and 1 MiB (32 KiB).
  EXPECT_NEAR(models::memory_efficiency_at(32768, c), 0.7, 1e-4);

  // The file's list replaces the one already there; an empty list clears it.
  models::ComputeCalibration replaced = calibrated_device_defaults();
  replaced.memory_points = {{1, 0.1}, {2, 0.2}};
  backend::FabricParams f;
  apply_calibration_text("[compute]\nmemory_points = [ { bytes = 4096, efficiency = 0.5 } ]\n", "t", replaced, f);
  ASSERT_EQ(replaced.memory_points.size(), 1u);
  EXPECT_DOUBLE_EQ(replaced.memory_points[0].bytes, 4096);
  apply_calibration_text("[compute]\nmemory_points = []\n", "t", replaced, f);
  EXPECT_TRUE(replaced.memory_points.empty());
}

TEST(CalibrationFileMemoryPoints, BadPointsNameTheKey) {
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, eff = 0.5 } ]\n"),
            "calibration.compute.memory_points.eff");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, efficiency = 0.5, m = 3 } ]\n"),
            "calibration.compute.memory_points.m");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = \"1 KiB\", efficiency = 0.5 } ]\n"),
            "calibration.compute.memory_points.bytes");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, efficiency = true } ]\n"),
            "calibration.compute.memory_points.efficiency");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = 3\n"), "calibration.compute.memory_points");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ 1024 ]\n"), "calibration.compute.memory_points");
  // Out of range (models::validate).
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 0, efficiency = 0.5 } ]\n"),
            "calibration.compute.memory_points");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, efficiency = 1.5 } ]\n"),
            "calibration.compute.memory_points");
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024, efficiency = 0 } ]\n"),
            "calibration.compute.memory_points");
  // A point with its efficiency missing keeps 0, which is out of range.
  EXPECT_EQ(apply_key("[compute]\nmemory_points = [ { bytes = 1024 } ]\n"), "calibration.compute.memory_points");
}

}  // namespace
}  // namespace megasim::scenarios
