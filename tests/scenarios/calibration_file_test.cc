#include "scenarios/calibration_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "models/gpu_spec.h"
#include "scenarios/run_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

struct Calibrated {
  models::ComputeCalibration compute;
  backend::FabricParams fabric;
};

Calibrated apply(const std::string& text) {
  Calibrated c{models::default_compute_calibration(models::find_gpu("A100")), {}};
  apply_calibration_text(text, "test.toml", c.compute, c.fabric);
  return c;
}

std::string error_key(const std::string& text) {
  try {
    apply(text);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

TEST(CalibrationFile, FieldsReplaceDefaultsAndAbsentOnesStay) {
  const Calibrated defaults = apply("");
  const Calibrated c = apply(R"(
[compute]
best_gemm_efficiency = 0.7
launch_overhead_us = 2.5
comm_sm_fraction = 0.125
gemm_points = [ { m = 8192, n = 2304, k = 6144, efficiency = 0.71 } ]
[network]
nvlink_efficiency = 0.77
)");
  EXPECT_DOUBLE_EQ(c.compute.best_gemm_efficiency, 0.7);
  EXPECT_EQ(c.compute.launch_overhead_ns, 2500);
  EXPECT_DOUBLE_EQ(c.compute.comm_sm_fraction, 0.125);
  ASSERT_EQ(c.compute.gemm_points.size(), 1u);
  EXPECT_EQ(c.compute.gemm_points[0].n, 2304);
  EXPECT_DOUBLE_EQ(c.compute.gemm_points[0].efficiency, 0.71);
  EXPECT_DOUBLE_EQ(c.fabric.nvlink_efficiency, 0.77);
  EXPECT_DOUBLE_EQ(c.compute.memory_efficiency, defaults.compute.memory_efficiency);
  EXPECT_DOUBLE_EQ(c.fabric.network_efficiency, defaults.fabric.network_efficiency);
}

TEST(CalibrationFile, BadInputNamesTheKey) {
  EXPECT_EQ(error_key("[compute]\nbest_gemm_efficiency = 1.5\n"), "calibration.compute.best_gemm_efficiency");
  EXPECT_EQ(error_key("[compute]\nbest_gemm_efficency = 0.5\n"), "calibration.compute.best_gemm_efficency");
  EXPECT_EQ(error_key("[compute]\nmemory_efficiency = \"high\"\n"), "calibration.compute.memory_efficiency");
  EXPECT_EQ(error_key("[compute]\ngemm_points = [ { m = 1, n = 2, k = 3, eff = 0.5 } ]\n"),
            "calibration.compute.gemm_points.eff");
  EXPECT_EQ(error_key("[compute]\ncomm_sm_fraction = 1\n"), "calibration.compute.comm_sm_fraction");
  EXPECT_EQ(error_key("[network]\nnvlink_efficiency = 0\n"), "fabric.nvlink_efficiency");
  EXPECT_EQ(error_key("[gpu]\nx = 1\n"), "calibration.gpu");
  EXPECT_THROW(apply("[compute\n"), sim::ConfigError);
  models::ComputeCalibration c;
  backend::FabricParams f;
  EXPECT_THROW(apply_calibration_file("/nonexistent/calibration.toml", c, f), sim::ConfigError);
}

// A large GEMM is compute-bound: time = FLOPs / (peak x efficiency) + launch. Halving the large-GEMM
// efficiency doubles the part above the launch overhead.
TEST(CalibrationFile, HalvingGemmEfficiencyDoublesLargeGemmTime) {
  const Calibrated base = apply("");
  const Calibrated half =
      apply("[compute]\nbest_gemm_efficiency = " + std::to_string(base.compute.best_gemm_efficiency / 2));
  const models::GpuSpec& gpu = models::find_gpu("A100");
  const models::GemmShape shape{16384, 16384, 16384, 1};
  const double launch = static_cast<double>(base.compute.launch_overhead_ns) * 1e-9;
  const double t_base = models::gemm_time_s(shape, gpu, base.compute) - launch;
  const double t_half = models::gemm_time_s(shape, gpu, half.compute) - launch;
  EXPECT_NEAR(t_half, 2 * t_base, 1e-6 * t_half);
}

// Through a whole iteration: slower GEMMs can only make the iteration longer.
TEST(CalibrationFile, ScenarioKeyAppliesTheFileToRun) {
  const std::string path = ::testing::TempDir() + "/megasim_calibration_test.toml";
  {
    std::ofstream out(path);
    out << "[compute]\nbest_gemm_efficiency = 0.5\n";
  }
  Scenario s;
  s.cluster.gpus = 64;
  s.plan.global_batch_size = 8;
  const double base = run_iteration_study(s).report.iteration_time_s;
  s.calibration_file = path;
  const double slower = run_iteration_study(s).report.iteration_time_s;
  EXPECT_GT(slower, base * 1.2);
  s.calibration_file = "/nonexistent.toml";
  EXPECT_THROW(run_iteration_study(s), sim::ConfigError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace megasim::scenarios
