// The fixture of the cpu calibration tests (cpu_calibration_test.cc, cpu_calibration_file_test.cc):
// a tiny GPT run as PP 2 or DP 2 over two ranks of one server, and a made-up probe whose every time
// follows from a formula written here, so that expected values can be recomputed by walking the
// workload in the tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/layer_ops.h"
#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"
#include "scenarios/studies/calibrate/cpu_calibration.h"

namespace megasim::scenarios::testing {

// ---------------------------------------------------------------------------------------------
// The tiny GPT: 2 layers, hidden 256, 4 heads (head dim 64), sequence 128, vocabulary 2048, unfused
// attention, 4 micro-batches of 1, on two ranks of one server.

inline std::string tiny_scenario(bool data_parallel, const std::string& calibration_file = "") {
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

inline models::Workload workload_of(const Scenario& s) {
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

inline constexpr double kFastFlops = 50e9;
inline constexpr double kSlowFlops = 25e9;
inline constexpr double kCacheBytes = 256.0 * 1024;
inline constexpr double kCacheRate = 20e9;
inline constexpr double kStreamRate = 8e9;
inline constexpr double kOverheadS = 1e-6;  // well under the smallest op, so no time is clamped
inline constexpr double kDpBusRate = 2e9;
inline constexpr double kDpLatencyS = 1e-5;
inline constexpr double kReductionRate = 4e9;
inline constexpr double kP2pRate = 3e9;
inline constexpr double kP2pLatencyS = 5e-6;
inline constexpr double kSmallAllReduceBytes = 8192;
inline constexpr double kSmallAllReduceS = 20e-6;

inline bool is_slow(const models::GemmShape& s) {
  return s.m == 128 && s.n == 128 && s.k == 64;
}
inline double product_rate(const models::GemmShape& s) {
  return is_slow(s) ? kSlowFlops : kFastFlops;
}
inline double flops_of(const models::GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}
// As the real probe does, a measured op time includes the fixed cost of an op.
inline double fake_gemm_s(const models::GemmShape& s) {
  return flops_of(s) / product_rate(s) + kOverheadS;
}
inline double memory_rate(double bytes) {
  return bytes < kCacheBytes ? kCacheRate : kStreamRate;
}
inline double fake_memory_s(double bytes) {
  return bytes / memory_rate(bytes) + kOverheadS;
}
inline double dp_bus_factor(models::CollectiveOp op) {
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
inline bool reduces(models::CollectiveOp op) {
  return op == models::CollectiveOp::kAllReduce || op == models::CollectiveOp::kReduceScatter;
}
// Over 2 members: the transfer at the bus rate, a fixed latency, and for a reducing collective the
// combining of the half it receives at kReductionRate.
inline double fake_dp_s(models::CollectiveOp op, double bytes) {
  return bytes * dp_bus_factor(op) / kDpBusRate + kDpLatencyS + (reduces(op) ? 0.5 * bytes / kReductionRate : 0.0);
}

inline backend::CpuProbe fake_probe() {
  backend::CpuProbe p;
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

inline bool is_product(const models::LayerOp& op) {
  return op.kind == models::OpKind::kGemm || op.kind == models::OpKind::kAttention;
}
inline bool is_memory(const models::LayerOp& op) {
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
inline ShapeKey key_of(const models::GemmShape& s) {
  return {s.m, s.n, s.k, s.batch};
}

// Test names of the two plans.
inline std::string plan_name(const ::testing::TestParamInfo<bool>& param) {
  return param.param ? "Dp2" : "Pp2";
}

}  // namespace megasim::scenarios::testing
