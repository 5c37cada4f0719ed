#include "scenarios/config/calibration_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/config/device.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "tests/scenarios/config_error_util.h"

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
flash_attention_1_forward_efficiency = 0.3
flash_attention_1_backward_efficiency = 0.25
gemm_points = [ { m = 8192, n = 2304, k = 6144, efficiency = 0.71 } ]
[network]
nvlink_efficiency = 0.77
)");
  EXPECT_DOUBLE_EQ(c.compute.best_gemm_efficiency, 0.7);
  EXPECT_DOUBLE_EQ(c.compute.flash_attention_1_forward_efficiency, 0.3);
  EXPECT_DOUBLE_EQ(c.compute.flash_attention_1_backward_efficiency, 0.25);
  EXPECT_DOUBLE_EQ(c.compute.flash_attention_forward_efficiency, defaults.compute.flash_attention_forward_efficiency);
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
  EXPECT_EQ(error_key("[compute]\nflash_attention_1_forward_efficiency = 0\n"),
            "calibration.compute.flash_attention_1_forward_efficiency");
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

// [collective]: microseconds in the file, nanoseconds in models::CollectiveParams (rounded to the
// nearest nanosecond); keys the file leaves out keep the caller's values.
models::CollectiveParams apply_collective(const std::string& text, const models::CollectiveParams& start = {}) {
  models::ComputeCalibration compute = models::default_compute_calibration(models::find_gpu("A100"));
  backend::FabricParams fabric;
  models::CollectiveParams collective = start;
  apply_calibration_text(text, "test.toml", compute, fabric, &collective);
  return collective;
}

using testing::thrown_key;

TEST(CalibrationFile, CollectiveLatenciesAreMicrosecondsAndAbsentOnesStay) {
  models::CollectiveParams start;
  start.channels = 4;
  start.net_step_latency_ns = 7000;
  start.hierarchical = false;
  const models::CollectiveParams c = apply_collective(R"(
[collective]
base_latency_us = 12.5
nvlink_step_latency_us = 0.25
)",
                                                      start);
  EXPECT_EQ(c.base_latency_ns, 12500);
  EXPECT_EQ(c.nvlink_step_latency_ns, 250);
  EXPECT_EQ(c.net_step_latency_ns, 7000);  // not in the file
  EXPECT_EQ(c.channels, 4);
  EXPECT_FALSE(c.hierarchical);

  const models::CollectiveParams ints =
      apply_collective("[collective]\nnet_step_latency_us = 3\nbase_latency_us = 0\n");
  EXPECT_EQ(ints.net_step_latency_ns, 3000);  // an integer is accepted for a number
  EXPECT_EQ(ints.base_latency_ns, 0);
  EXPECT_EQ(apply_collective("[collective]\nnvlink_step_latency_us = 0.0016\n").nvlink_step_latency_ns, 2);

  // Without a [collective] section the caller's parameters are untouched.
  const models::CollectiveParams none = apply_collective("[compute]\nmemory_efficiency = 0.5\n", start);
  EXPECT_EQ(none.base_latency_ns, start.base_latency_ns);
  EXPECT_EQ(none.nvlink_step_latency_ns, start.nvlink_step_latency_ns);
  EXPECT_EQ(none.net_step_latency_ns, start.net_step_latency_ns);
}

TEST(CalibrationFile, BadCollectiveInputNamesTheKey) {
  EXPECT_EQ(thrown_key([] { apply_collective("[collective]\nbase_latency_ms = 1\n"); }),
            "calibration.collective.base_latency_ms");
  EXPECT_EQ(thrown_key([] { apply_collective("[collective]\nchannels = 4\n"); }), "calibration.collective.channels");
  EXPECT_EQ(thrown_key([] { apply_collective("[collective]\nnet_step_latency_us = \"slow\"\n"); }),
            "calibration.collective.net_step_latency_us");
  // A negative latency fails the collective parameters' own validation.
  EXPECT_THROW(apply_collective("[collective]\nbase_latency_us = -2\n"), sim::ConfigError);
}

// Callers that have no collective parameters (the compute-only studies) reject the section rather
// than ignore it.
TEST(CalibrationFile, CollectiveSectionWithoutATargetIsAnError) {
  EXPECT_EQ(error_key("[collective]\nbase_latency_us = 1\n"), "calibration.collective");
  EXPECT_EQ(error_key("[compute]\nmemory_efficiency = 0.5\n[collective]\nnet_step_latency_us = 5\n"),
            "calibration.collective");
}

// The [device] of the header comment, with one key left out or given another value.
const std::vector<std::pair<std::string, std::string>> device_keys = {
    {"name", "\"cpu: test machine, float32\""},
    {"peak_tflops", "0.1"},
    {"memory_tbytes_per_s", "0.01"},
    {"memory_gbytes", "12"},
    {"intra_node_gbytes_per_s", "4.5"},
};

std::string device_toml(const std::string& omit = "", const std::string& key = "", const std::string& value = "") {
  std::string text = "[device]\n";
  for (const auto& [k, v] : device_keys) {
    if (k == omit) continue;
    text += k + " = " + (k == key ? value : v) + "\n";
  }
  return text;
}

std::string device_error_key(const std::string& text) {
  return thrown_key([&] { calibration_device_text(text, "device.toml"); });
}

TEST(CalibrationFile, DeviceSectionGivesTheGpuSpec) {
  const std::optional<models::GpuSpec> gpu = calibration_device_text(device_toml(), "device.toml");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->name, "cpu: test machine, float32");
  EXPECT_DOUBLE_EQ(gpu->peak_bf16_dense_tflops, 0.1);
  EXPECT_DOUBLE_EQ(gpu->hbm_tbytes_per_s, 0.01);
  EXPECT_DOUBLE_EQ(gpu->hbm_gbytes, 12);  // an integer is accepted for a number
  // The file gives one direction between two ranks; GpuSpec counts both directions together.
  EXPECT_DOUBLE_EQ(gpu->nvlink_total_gbytes_per_s, 2 * 4.5);
  EXPECT_DOUBLE_EQ(gpu->best_gemm_efficiency, 0);  // unknown: the file's [compute] carries it

  // Section and key order do not matter.
  const std::optional<models::GpuSpec> reordered = calibration_device_text(
      "[compute]\nmemory_efficiency = 0.5\n[device]\nintra_node_gbytes_per_s = 1\nmemory_gbytes = 2\n"
      "memory_tbytes_per_s = 3\npeak_tflops = 4\nname = \"x\"\n",
      "device.toml");
  ASSERT_TRUE(reordered.has_value());
  EXPECT_EQ(reordered->name, "x");
  EXPECT_DOUBLE_EQ(reordered->peak_bf16_dense_tflops, 4);
  EXPECT_DOUBLE_EQ(reordered->hbm_tbytes_per_s, 3);
  EXPECT_DOUBLE_EQ(reordered->hbm_gbytes, 2);
  EXPECT_DOUBLE_EQ(reordered->nvlink_total_gbytes_per_s, 2);
}

TEST(CalibrationFile, EveryDeviceKeyIsRequired) {
  for (const auto& [key, value] : device_keys) {
    const std::string text = device_toml(key);
    EXPECT_EQ(device_error_key(text), "calibration.device." + key);
    // apply_calibration_text checks the section too.
    EXPECT_EQ(error_key(text), "calibration.device." + key);
  }
  EXPECT_EQ(device_error_key("[device]\n"), "calibration.device.name");
}

TEST(CalibrationFile, BadDeviceValuesNameTheKey) {
  for (const auto& [key, value] : device_keys) {
    if (key == "name") continue;
    for (const std::string bad : {"0", "0.0", "-1", "-0.5", "nan", "inf", "\"fast\"", "[1]"}) {
      const std::string text = device_toml("", key, bad);
      EXPECT_EQ(device_error_key(text), "calibration.device." + key) << key << " = " << bad;
      EXPECT_EQ(error_key(text), "calibration.device." + key) << key << " = " << bad;
    }
  }
  EXPECT_EQ(device_error_key(device_toml("", "name", "\"\"")), "calibration.device.name");
  EXPECT_EQ(device_error_key(device_toml("", "name", "3")), "calibration.device.name");
  EXPECT_EQ(device_error_key(device_toml() + "clock_ghz = 2\n"), "calibration.device.clock_ghz");
  EXPECT_EQ(error_key(device_toml() + "clock_ghz = 2\n"), "calibration.device.clock_ghz");
  EXPECT_EQ(device_error_key("device = 3\n"), "calibration.device");
  EXPECT_EQ(error_key("device = 3\n"), "calibration.device");
  EXPECT_THROW(calibration_device_text("[device\n", "device.toml"), sim::ConfigError);
}

TEST(CalibrationFile, InterNodeRateIsOptionalAndChecked) {
  // Without it (a calibration on one host): 0, not measured.
  const std::optional<CalibratedDevice> one_host = calibrated_device_text(device_toml(), "device.toml");
  ASSERT_TRUE(one_host.has_value());
  EXPECT_DOUBLE_EQ(one_host->inter_node_gbytes_per_s, 0);
  EXPECT_DOUBLE_EQ(one_host->gpu.nvlink_total_gbytes_per_s, 9);
  // With it: GB/s each way between two hosts; the GpuSpec is the same.
  const std::string two_hosts = device_toml() + "inter_node_gbytes_per_s = 1.2\n";
  const std::optional<CalibratedDevice> device = calibrated_device_text(two_hosts, "device.toml");
  ASSERT_TRUE(device.has_value());
  EXPECT_DOUBLE_EQ(device->inter_node_gbytes_per_s, 1.2);
  EXPECT_EQ(device->gpu.name, "cpu: test machine, float32");
  EXPECT_DOUBLE_EQ(calibration_device_text(two_hosts, "device.toml")->nvlink_total_gbytes_per_s, 9);
  EXPECT_EQ(error_key(two_hosts), "(no error)");  // apply_calibration_text accepts it
  for (const std::string bad : {"0", "-1", "nan", "inf", "\"fast\"", "[1]"}) {
    const std::string text = device_toml() + "inter_node_gbytes_per_s = " + bad + "\n";
    EXPECT_EQ(device_error_key(text), "calibration.device.inter_node_gbytes_per_s") << bad;
    EXPECT_EQ(error_key(text), "calibration.device.inter_node_gbytes_per_s") << bad;
  }
  // It does not stand in for a required key.
  EXPECT_EQ(device_error_key(device_toml("intra_node_gbytes_per_s") + "inter_node_gbytes_per_s = 1\n"),
            "calibration.device.intra_node_gbytes_per_s");
  // From a file, too.
  const std::string path = ::testing::TempDir() + "/megasim_calibration_inter_node.toml";
  std::ofstream(path) << two_hosts;
  EXPECT_DOUBLE_EQ(calibrated_device(path)->inter_node_gbytes_per_s, 1.2);
  std::remove(path.c_str());
}

TEST(CalibrationFile, FileWithoutDeviceHasNone) {
  EXPECT_FALSE(calibration_device_text("", "empty.toml").has_value());
  EXPECT_FALSE(calibration_device_text("[compute]\nbest_gemm_efficiency = 0.5\n[network]\nnvlink_efficiency = 0.8\n",
                                       "no_device.toml")
                   .has_value());

  const std::string dir = ::testing::TempDir();
  const std::string with = dir + "/megasim_calibration_with_device.toml";
  const std::string without = dir + "/megasim_calibration_without_device.toml";
  std::ofstream(with) << "[compute]\nmemory_efficiency = 0.5\n" << device_toml();
  std::ofstream(without) << "[compute]\nmemory_efficiency = 0.5\n";
  const std::optional<models::GpuSpec> from_file = calibration_device(with);
  ASSERT_TRUE(from_file.has_value());
  EXPECT_EQ(from_file->name, "cpu: test machine, float32");
  EXPECT_DOUBLE_EQ(from_file->nvlink_total_gbytes_per_s, 9);
  EXPECT_FALSE(calibration_device(without).has_value());
  EXPECT_EQ(thrown_key([] { calibration_device("/nonexistent/calibration.toml"); }), "calibration.file");
  std::remove(with.c_str());
  std::remove(without.c_str());
}

// A file `megasim calibrate --backend cpu` writes carries a [device]; the compute and fabric
// parameters take its other sections and nothing from the device.
TEST(CalibrationFile, ApplyAcceptsAFileWithADevice) {
  const Calibrated defaults = apply("");
  const std::string text =
      "[compute]\nmemory_efficiency = 0.6\n" + device_toml() + "[network]\nnetwork_efficiency = 0.9\n";
  const Calibrated c = apply(text);
  EXPECT_DOUBLE_EQ(c.compute.memory_efficiency, 0.6);
  EXPECT_DOUBLE_EQ(c.fabric.network_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(c.compute.best_gemm_efficiency, defaults.compute.best_gemm_efficiency);
  EXPECT_EQ(c.compute.sm_count, defaults.compute.sm_count);
  EXPECT_EQ(c.compute.launch_overhead_ns, defaults.compute.launch_overhead_ns);
  EXPECT_DOUBLE_EQ(c.fabric.nvlink_efficiency, defaults.fabric.nvlink_efficiency);

  models::CollectiveParams collective;
  models::ComputeCalibration compute = models::default_compute_calibration(models::find_gpu("A100"));
  backend::FabricParams fabric;
  EXPECT_NO_THROW(
      apply_calibration_text(text + "[collective]\nbase_latency_us = 3\n", "test.toml", compute, fabric, &collective));
  EXPECT_EQ(collective.base_latency_ns, 3000);
}

// ---------------------------------------------------------------------------------------------
// [compute] memory_points in calibration files.

// The key of the error applying `text` names ("(no error)": none, and *out gets the result).
std::string apply_key(const std::string& text, models::ComputeCalibration* out = nullptr) {
  models::ComputeCalibration c = calibrated_device_defaults();
  backend::FabricParams f;
  const std::string key = thrown_key([&] { apply_calibration_text(text, "test.toml", c, f); });
  if (out != nullptr && key == "(no error)") *out = c;
  return key;
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
