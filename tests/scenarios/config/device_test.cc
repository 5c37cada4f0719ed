// The device a scenario runs on (scenarios/config/device.h): a gpus.csv GPU with its public
// defaults, or cluster.gpu = "calibrated", the [device] of the calibration file with neutral
// defaults; the file's other sections apply over either. The end-to-end tests time a tiny plan on a
// made-up slow device whose every expectation follows from the file's numbers.
#include "scenarios/config/device.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend/trace.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/op_time.h"
#include "models/workload.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "sim/time.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

// A folder of its own under the test temp dir, so that tests running in parallel do not share files.
std::filesystem::path temp_dir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("megasim_device_test_" + name);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

using testing::thrown_key;

// A slow made-up machine: 0.05 TFLOPS, 0.02 TB/s, 16 GB, 5 GB/s each way between two ranks.
std::string device_section(double peak_tflops = 0.05) {
  return "[device]\nname = \"test cpu\"\npeak_tflops = " + std::to_string(peak_tflops) +
         "\nmemory_tbytes_per_s = 0.02\nmemory_gbytes = 16\nintra_node_gbytes_per_s = 5\n";
}

Scenario calibrated_scenario(const std::string& calibration_file) {
  Scenario s;
  s.gpu = std::string(kCalibratedGpu);
  s.calibration_file = calibration_file;
  return s;
}

TEST(Device, WithoutAFileAGpusCsvGpuHasItsDefaults) {
  Scenario s;
  s.gpu = "H100-SXM-80GB";
  s.collective.net_step_latency_ns = 7000;
  s.fabric.network_efficiency = 0.5;
  const DeviceModel d = device_model(s);
  const models::GpuSpec& h100 = models::find_gpu("H100");
  const models::ComputeCalibration defaults = models::default_compute_calibration(h100);
  EXPECT_EQ(d.gpu.name, h100.name);
  EXPECT_DOUBLE_EQ(d.gpu.peak_bf16_dense_tflops, h100.peak_bf16_dense_tflops);
  EXPECT_DOUBLE_EQ(d.compute.best_gemm_efficiency, defaults.best_gemm_efficiency);
  EXPECT_EQ(d.compute.sm_count, defaults.sm_count);
  EXPECT_EQ(d.compute.gemm_tiles.size(), defaults.gemm_tiles.size());
  EXPECT_DOUBLE_EQ(d.compute.memory_efficiency, defaults.memory_efficiency);
  EXPECT_EQ(d.compute.launch_overhead_ns, defaults.launch_overhead_ns);
  EXPECT_DOUBLE_EQ(d.fabric.network_efficiency, 0.5);
  EXPECT_EQ(d.collective.net_step_latency_ns, 7000);
  EXPECT_EQ(d.collective.base_latency_ns, s.collective.base_latency_ns);
}

// The file's [compute], [network] and [collective] apply over the GPU's defaults and the scenario's
// fabric and collective parameters; a [device] does not replace a GPU gpus.csv names.
TEST(Device, AGpusCsvGpuIsItsDefaultsWithTheFileApplied) {
  const std::string file = write_file(temp_dir("gpus_csv") / "calibration.toml",
                                      "[compute]\nbest_gemm_efficiency = 0.6\nlaunch_overhead_us = 3\n"
                                      "[network]\nnetwork_efficiency = 0.9\n"
                                      "[collective]\nbase_latency_us = 7\nnet_step_latency_us = 2.5\n" +
                                          device_section());
  Scenario s;
  s.gpu = "A100-SXM-80GB";
  s.calibration_file = file;
  s.collective.nvlink_step_latency_ns = 1500;
  s.fabric.nvlink_efficiency = 0.7;
  const DeviceModel d = device_model(s);
  const models::GpuSpec& a100 = models::find_gpu("A100");
  EXPECT_EQ(d.gpu.name, a100.name);
  EXPECT_DOUBLE_EQ(d.gpu.peak_bf16_dense_tflops, a100.peak_bf16_dense_tflops);
  EXPECT_DOUBLE_EQ(d.gpu.hbm_tbytes_per_s, a100.hbm_tbytes_per_s);
  EXPECT_EQ(scenario_gpu(s).name, a100.name);

  models::ComputeCalibration expected = models::default_compute_calibration(a100);
  expected.best_gemm_efficiency = 0.6;
  expected.launch_overhead_ns = 3000;
  EXPECT_DOUBLE_EQ(d.compute.best_gemm_efficiency, expected.best_gemm_efficiency);
  EXPECT_EQ(d.compute.launch_overhead_ns, expected.launch_overhead_ns);
  EXPECT_EQ(d.compute.sm_count, expected.sm_count);
  ASSERT_EQ(d.compute.gemm_tiles.size(), expected.gemm_tiles.size());
  for (std::size_t i = 0; i < expected.gemm_tiles.size(); ++i) {
    EXPECT_EQ(d.compute.gemm_tiles[i].m, expected.gemm_tiles[i].m);
    EXPECT_EQ(d.compute.gemm_tiles[i].n, expected.gemm_tiles[i].n);
    EXPECT_DOUBLE_EQ(d.compute.gemm_tiles[i].relative_efficiency, expected.gemm_tiles[i].relative_efficiency);
  }
  EXPECT_DOUBLE_EQ(d.compute.gemm_k_overhead, expected.gemm_k_overhead);
  EXPECT_DOUBLE_EQ(d.compute.memory_efficiency, expected.memory_efficiency);
  EXPECT_DOUBLE_EQ(d.compute.flash_attention_forward_efficiency, expected.flash_attention_forward_efficiency);
  EXPECT_DOUBLE_EQ(d.compute.flash_attention_backward_efficiency, expected.flash_attention_backward_efficiency);
  EXPECT_DOUBLE_EQ(d.compute.flash_attention_1_forward_efficiency, expected.flash_attention_1_forward_efficiency);
  EXPECT_DOUBLE_EQ(d.compute.flash_attention_1_backward_efficiency, expected.flash_attention_1_backward_efficiency);
  EXPECT_DOUBLE_EQ(d.compute.comm_sm_fraction, expected.comm_sm_fraction);
  EXPECT_TRUE(d.compute.gemm_points.empty());

  EXPECT_DOUBLE_EQ(d.fabric.network_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(d.fabric.nvlink_efficiency, 0.7);  // the scenario's, not in the file
  EXPECT_EQ(d.collective.base_latency_ns, 7000);
  EXPECT_EQ(d.collective.net_step_latency_ns, 2500);
  EXPECT_EQ(d.collective.nvlink_step_latency_ns, 1500);  // the scenario's, not in the file
  EXPECT_EQ(d.collective.channels, s.collective.channels);
}

TEST(Device, CalibratedGpuIsTheFilesDevice) {
  const std::string file = write_file(temp_dir("calibrated_gpu") / "calibration.toml", device_section());
  Scenario s = calibrated_scenario(file);
  const models::GpuSpec gpu = scenario_gpu(s);
  EXPECT_EQ(gpu.name, "test cpu");
  EXPECT_DOUBLE_EQ(gpu.peak_bf16_dense_tflops, 0.05);
  EXPECT_DOUBLE_EQ(gpu.hbm_tbytes_per_s, 0.02);
  EXPECT_DOUBLE_EQ(gpu.hbm_gbytes, 16);
  EXPECT_DOUBLE_EQ(gpu.nvlink_total_gbytes_per_s, 10);
  const DeviceModel d = device_model(s);
  EXPECT_EQ(d.gpu.name, "test cpu");
  EXPECT_DOUBLE_EQ(d.gpu.peak_bf16_dense_tflops, 0.05);
  EXPECT_DOUBLE_EQ(d.gpu.nvlink_total_gbytes_per_s, 10);
  // Between two ranks of a server the cluster moves the file's intra-node rate each way, unless the
  // scenario sets its own.
  EXPECT_DOUBLE_EQ(effective_cluster(s).nvlink_gbytes_per_s, 5);
  s.cluster.nvlink_gbytes_per_s = 3;
  EXPECT_DOUBLE_EQ(effective_cluster(s).nvlink_gbytes_per_s, 3);
}

// A calibrated device starts from device.h's neutral values; the file's fields replace them, and
// its [collective] sets the collective latencies.
TEST(Device, CalibratedComputeIsNeutralWithTheFilesOverrides) {
  const std::filesystem::path dir = temp_dir("calibrated_compute");
  const DeviceModel neutral = device_model(calibrated_scenario(write_file(dir / "neutral.toml", device_section())));
  EXPECT_DOUBLE_EQ(neutral.compute.best_gemm_efficiency, 1);
  EXPECT_EQ(neutral.compute.sm_count, 1);
  ASSERT_EQ(neutral.compute.gemm_tiles.size(), 1u);
  EXPECT_EQ(neutral.compute.gemm_tiles[0].m, 1);
  EXPECT_EQ(neutral.compute.gemm_tiles[0].n, 1);
  EXPECT_DOUBLE_EQ(neutral.compute.gemm_tiles[0].relative_efficiency, 1);
  EXPECT_DOUBLE_EQ(neutral.compute.gemm_k_overhead, 0);
  EXPECT_DOUBLE_EQ(neutral.compute.memory_efficiency, 1);
  EXPECT_EQ(neutral.compute.launch_overhead_ns, 0);
  EXPECT_TRUE(neutral.compute.gemm_points.empty());
  EXPECT_NO_THROW(models::validate(neutral.compute));

  const std::string file = write_file(dir / "measured.toml", device_section() +
                                                                 "[compute]\nbest_gemm_efficiency = 0.8\n"
                                                                 "memory_efficiency = 0.7\nlaunch_overhead_us = 3\n"
                                                                 "[collective]\nbase_latency_us = 20\n"
                                                                 "nvlink_step_latency_us = 2.5\n"
                                                                 "net_step_latency_us = 40\n");
  Scenario s = calibrated_scenario(file);
  s.collective.channels = 3;
  const DeviceModel d = device_model(s);
  EXPECT_DOUBLE_EQ(d.compute.best_gemm_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(d.compute.memory_efficiency, 0.7);
  EXPECT_EQ(d.compute.launch_overhead_ns, 3000);
  EXPECT_EQ(d.compute.sm_count, 1);  // still neutral
  EXPECT_DOUBLE_EQ(d.compute.gemm_k_overhead, 0);
  EXPECT_EQ(d.collective.base_latency_ns, 20000);
  EXPECT_EQ(d.collective.nvlink_step_latency_ns, 2500);
  EXPECT_EQ(d.collective.net_step_latency_ns, 40000);
  EXPECT_EQ(d.collective.channels, 3);
}

// With the neutral values a GEMM runs at the device's peak (no tile, wave or k loss) unless its
// bytes take longer at the memory bandwidth, and a memory-bound kernel at the memory bandwidth.
TEST(Device, CalibratedKernelsRunAtTheFilesRates) {
  const DeviceModel d =
      device_model(calibrated_scenario(write_file(temp_dir("rates") / "calibration.toml", device_section())));
  // 2·512·512·512 FLOPs at 0.05e12 FLOP/s; its 3·512²·2 bytes would take far less at 0.02e12 B/s.
  const models::GemmShape big{512, 512, 512, 1};
  EXPECT_NEAR(models::gemm_time_s(big, d.gpu, d.compute), 2.0 * 512 * 512 * 512 / 0.05e12, 1e-15);
  // 1 × 4096 × 4096: 2·4096² FLOPs (0.67 ms) against (4096 + 4096² + 4096)·2 bytes (1.68 ms).
  const models::GemmShape thin{1, 4096, 4096, 1};
  EXPECT_NEAR(models::gemm_time_s(thin, d.gpu, d.compute), (4096.0 + 4096.0 * 4096 + 4096) * 2 / 0.02e12, 1e-15);
  EXPECT_NEAR(models::memory_bound_time_s(1e6, d.gpu, d.compute), 1e6 / 0.02e12, 1e-15);
}

// The NIC as the intra-node rate gives NVLink: from the calibrated device's inter-node rate when its
// file has one, MegaScale's 200 Gb/s otherwise, and the scenario's own value over either.
TEST(Device, CalibratedInterNodeRateIsTheClustersNic) {
  const std::filesystem::path dir = temp_dir("nic");
  Scenario s =
      calibrated_scenario(write_file(dir / "two_hosts.toml", device_section() + "inter_node_gbytes_per_s = 1.25\n"));
  EXPECT_DOUBLE_EQ(s.cluster.nic_gbps, 0);     // a scenario names no NIC by default
  EXPECT_DOUBLE_EQ(scenario_nic_gbps(s), 10);  // 1.25 GB/s x 8
  EXPECT_DOUBLE_EQ(effective_cluster(s).nic_gbps, 10);
  EXPECT_DOUBLE_EQ(effective_cluster(s).nvlink_gbytes_per_s, 5);
  s.cluster.nic_gbps = 25;
  EXPECT_DOUBLE_EQ(effective_cluster(s).nic_gbps, 25);

  const Scenario one_host = calibrated_scenario(write_file(dir / "one_host.toml", device_section()));
  EXPECT_DOUBLE_EQ(effective_cluster(one_host).nic_gbps, kDefaultNicGbps);
  Scenario gpu;
  gpu.gpu = "H100-SXM-80GB";
  EXPECT_DOUBLE_EQ(effective_cluster(gpu).nic_gbps, 200);
  // A calibrated scenario without its file is refused naming the GPU key, as for NVLink.
  EXPECT_EQ(thrown_key([] { scenario_nic_gbps(calibrated_scenario("")); }), "cluster.gpu");
}

TEST(Device, CalibratedNeedsACalibrationFileWithADevice) {
  const Scenario no_file = calibrated_scenario("");
  EXPECT_EQ(thrown_key([&] { scenario_gpu(no_file); }), "cluster.gpu");
  EXPECT_EQ(thrown_key([&] { device_model(no_file); }), "cluster.gpu");
  EXPECT_EQ(thrown_key([&] { validate(no_file); }), "cluster.gpu");

  const std::filesystem::path dir = temp_dir("needs_device");
  const Scenario no_device =
      calibrated_scenario(write_file(dir / "no_device.toml", "[compute]\nbest_gemm_efficiency = 0.5\n"));
  EXPECT_EQ(thrown_key([&] { scenario_gpu(no_device); }), "cluster.gpu");
  EXPECT_EQ(thrown_key([&] { device_model(no_device); }), "cluster.gpu");
  EXPECT_EQ(thrown_key([&] { validate(no_device); }), "cluster.gpu");
  EXPECT_EQ(thrown_key([&] { run_iteration_study(no_device); }), "cluster.gpu");

  const Scenario incomplete =
      calibrated_scenario(write_file(dir / "incomplete.toml",
                                     "[device]\nname = \"x\"\npeak_tflops = 1\nmemory_tbytes_per_s = 1\n"
                                     "intra_node_gbytes_per_s = 1\n"));
  EXPECT_EQ(thrown_key([&] { device_model(incomplete); }), "calibration.device.memory_gbytes");
  EXPECT_EQ(thrown_key([&] { device_model(calibrated_scenario((dir / "missing.toml").string())); }),
            "calibration.file");
}

TEST(Device, LoaderAcceptsCalibrated) {
  EXPECT_EQ(load_scenario_text("[cluster]\ngpu = \"calibrated\"\n").gpu, kCalibratedGpu);
  Scenario s;
  apply_override(s, "cluster.gpu=calibrated");
  EXPECT_EQ(s.gpu, kCalibratedGpu);
  EXPECT_EQ(thrown_key([] { load_scenario_text("[cluster]\ngpu = \"calibrate\"\n"); }), "cluster.gpu");
}

// A tiny GPT on two ranks of one server, PP 2, 4 micro-batches, unfused attention. With the neutral
// calibration every GEMM of it is compute-bound on the device: the smallest arithmetic intensity is
// the attention products' (m = n = 256 or k = 256, head dim 64, 43 FLOP/byte), above the device's
// ridge of peak / bandwidth = 2.5 FLOP/byte (1.25 at half the peak).
std::string tiny_scenario(const std::string& calibration_file) {
  return R"([cluster]
gpu = "calibrated"
gpus = 2
gpus_per_server = 2
rails = 2
[model]
num_layers = 4
hidden_size = 512
num_attention_heads = 8
seq_length = 256
vocab_size = 8192
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 2
num_layers_per_virtual_pipeline_stage = 0
sequence_parallel = false
micro_batch_size = 1
global_batch_size = 4
recompute_granularity = "none"
use_flash_attention = false
[calibration]
file = ")" +
         calibration_file + "\"\n";
}

// What a unit's compute tasks took in the trace, what the cost model gives for their kernel runs on
// `gpu` with the neutral calibration, and their hardware FLOPs; summed over the unit's tasks.
struct ComputeSums {
  double simulated_s = 0;
  double expected_s = 0;
  double flops = 0;
  int tasks = 0;
};

ComputeSums compute_sums(const RunResult& r, const backend::TraceUnit& unit, const models::GpuSpec& gpu) {
  models::ComputeCalibration neutral;  // device.h's documented neutral values
  neutral.best_gemm_efficiency = 1;
  neutral.sm_count = 1;
  neutral.gemm_tiles = {{1, 1, 1.0}};
  neutral.gemm_k_overhead = 0;
  neutral.memory_efficiency = 1;
  neutral.flash_attention_forward_efficiency = 1;  // unused: the plan's attention is unfused
  neutral.flash_attention_backward_efficiency = 1;
  neutral.flash_attention_1_forward_efficiency = 1;
  neutral.flash_attention_1_backward_efficiency = 1;
  neutral.launch_overhead_ns = 0;
  neutral.comm_sm_fraction = 0;  // unused: TP 1 has no TP collective
  const models::StageProgram& program = r.workload.stages.at(static_cast<std::size_t>(unit.stage));
  EXPECT_EQ(unit.records.size(), program.tasks.size());
  ComputeSums sums;
  for (std::size_t t = 0; t < program.tasks.size() && t < unit.records.size(); ++t) {
    const models::Task& task = program.tasks[t];
    if (task.kind != models::TaskKind::kCompute) continue;
    ++sums.tasks;
    sums.simulated_s += sim::to_seconds(unit.records[t].end - unit.records[t].start);
    sums.flops += models::task_hardware_flops(r.workload, task);
    for (const models::Task::KernelRun& run : task.runs) {
      const models::KernelList& list = r.workload.kernels.at(static_cast<std::size_t>(run.kernels));
      sums.expected_s += run.repeat * models::kernel_list_compute_time_s(list, r.workload.plan.plan, gpu, neutral);
    }
  }
  return sums;
}

models::GpuSpec file_device(double peak_tflops) {
  models::GpuSpec gpu;
  gpu.name = "test cpu";
  gpu.peak_bf16_dense_tflops = peak_tflops;
  gpu.hbm_tbytes_per_s = 0.02;
  gpu.hbm_gbytes = 16;
  gpu.nvlink_total_gbytes_per_s = 10;
  return gpu;
}

TEST(Device, CalibratedIterationRunsTheCostModelOnTheFilesDevice) {
  const std::filesystem::path dir = temp_dir("iteration");
  write_file(dir / "device.toml", device_section(0.05));
  write_file(dir / "half_peak.toml", device_section(0.025));
  // Relative calibration files resolve against the scenario file's folder.
  const Scenario s = load_scenario_file(write_file(dir / "scenario.toml", tiny_scenario("device.toml")));
  const Scenario half = load_scenario_file(write_file(dir / "half.toml", tiny_scenario("half_peak.toml")));
  ASSERT_EQ(s.gpu, kCalibratedGpu);
  const RunResult base = run_iteration_study(s);
  const RunResult slow = run_iteration_study(half);
  ASSERT_EQ(base.trace.units.size(), 2u);  // PP 2 x DP 1 at TP 1
  ASSERT_EQ(slow.trace.units.size(), base.trace.units.size());

  for (std::size_t u = 0; u < base.trace.units.size(); ++u) {
    const ComputeSums b = compute_sums(base, base.trace.units[u], file_device(0.05));
    const ComputeSums h = compute_sums(slow, slow.trace.units[u], file_device(0.025));
    ASSERT_GT(b.tasks, 0);
    // Each task's duration is rounded to the nanosecond.
    const double rounding = 0.5e-9 * b.tasks;
    EXPECT_NEAR(b.simulated_s, b.expected_s, 1e-9 * b.expected_s + rounding) << "stage " << u;
    EXPECT_NEAR(h.simulated_s, h.expected_s, 1e-9 * h.expected_s + rounding) << "stage " << u;
    // One compute stream per rank: the iteration lasts at least as long as its compute.
    EXPECT_GE(sim::to_seconds(base.trace.iteration_time), b.simulated_s);
    // Every GEMM is compute-bound at both peaks and the memory-bound kernels do not depend on the
    // peak, so halving the peak adds the rank's FLOPs at the full peak.
    ASSERT_GT(b.flops, 0);
    EXPECT_NEAR(h.simulated_s - b.simulated_s, b.flops / 0.05e12, 1e-9 * h.simulated_s + 2 * rounding) << "stage " << u;
  }
  EXPECT_GT(slow.trace.iteration_time, base.trace.iteration_time);
  EXPECT_GT(slow.report.iteration_time_s, base.report.iteration_time_s);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace megasim::scenarios
