// The calibration file `megasim calibrate --backend cpu` writes: read back by calibration_file.h it
// gives the report's values, its text and JSON carry the measurements, and the simulator on the
// device it describes reproduces the made-up probe's times (cpu_calibration_test_util.h).
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
  EXPECT_NEAR(c.memory_efficiency, r.compute.memory_efficiency, 5e-6);  // 6 significant digits
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
  EXPECT_NEAR(collective.reduction_gbytes_per_s, r.collective.reduction_gbytes_per_s,
              5e-6 * r.collective.reduction_gbytes_per_s);  // 6 significant digits

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
  // The device resolved once (one read of the file) is the device each question asks for alone.
  EXPECT_EQ(d.cluster, effective_cluster(s));
  EXPECT_EQ(d.gpu.name, scenario_gpu(s).name);
  EXPECT_EQ(d.cluster.nic_gbps, scenario_nic_gbps(s));
  EXPECT_EQ(d.cluster.nvlink_gbytes_per_s, d.gpu.nvlink_total_gbytes_per_s / 2);
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
}  // namespace
}  // namespace megasim::scenarios
