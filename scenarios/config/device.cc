#include "scenarios/config/device.h"

#include <optional>
#include <string>

#include "scenarios/config/calibration_file.h"
#include "sim/error.h"

namespace megasim::scenarios {
models::ComputeCalibration calibrated_device_defaults() {
  models::ComputeCalibration c;
  c.best_gemm_efficiency = 1.0;
  c.sm_count = 1;
  c.gemm_tiles = {{1, 1, 1.0}};
  c.gemm_k_overhead = 0;
  c.memory_efficiency = 1.0;
  c.flash_attention_forward_efficiency = 1.0;
  c.flash_attention_backward_efficiency = 1.0;
  c.flash_attention_1_forward_efficiency = 1.0;
  c.flash_attention_1_backward_efficiency = 1.0;
  c.launch_overhead_ns = 0;
  c.comm_sm_fraction = 0;
  return c;
}

namespace {

std::optional<CalibrationFile> calibration_of(const Scenario& scenario) {
  if (scenario.calibration_file.empty()) return std::nullopt;
  return CalibrationFile::read(scenario.calibration_file);
}

// cluster.gpu's spec; a calibrated device's from `file` (the scenario's calibration file, when it
// has one).
models::GpuSpec gpu_of(const Scenario& scenario, const std::optional<CalibrationFile>& file) {
  if (scenario.gpu != kCalibratedGpu) return models::find_gpu(scenario.gpu, "cluster.gpu");
  const std::string valid =
      "a GPU of gpus.csv, or \"calibrated\" with a calibration.file that has a [device] section "
      "(megasim calibrate --backend cpu writes one)";
  if (!file) throw sim::ConfigError("cluster.gpu", std::string(kCalibratedGpu), valid);
  if (!file->device()) {
    throw sim::ConfigError("cluster.gpu", std::string(kCalibratedGpu) + " (" + scenario.calibration_file + ")", valid);
  }
  return file->device()->gpu;
}

double nic_gbps_of(const Scenario& scenario, const std::optional<CalibrationFile>& file) {
  if (scenario.cluster.nic_gbps != 0) return scenario.cluster.nic_gbps;
  if (scenario.gpu == kCalibratedGpu) {
    gpu_of(scenario, file);  // the errors of a calibrated device without a file or [device]
    if (file->device()->inter_node_gbytes_per_s > 0) return file->device()->inter_node_gbytes_per_s * 8;
  }
  return kDefaultNicGbps;
}

topo::ClusterParams cluster_of(const Scenario& scenario, const models::GpuSpec& gpu, double nic_gbps) {
  topo::ClusterParams params = scenario.cluster;
  if (params.nvlink_gbytes_per_s == 0) params.nvlink_gbytes_per_s = gpu.nvlink_total_gbytes_per_s / 2;
  if (params.nic_gbps == 0) params.nic_gbps = nic_gbps;
  return params;
}

// The calibration file a calibrated device needs (others do not read it for their GpuSpec).
std::optional<CalibrationFile> device_file_of(const Scenario& scenario) {
  return scenario.gpu == kCalibratedGpu ? calibration_of(scenario) : std::nullopt;
}

}  // namespace

models::GpuSpec scenario_gpu(const Scenario& scenario) {
  return gpu_of(scenario, device_file_of(scenario));
}

double scenario_nic_gbps(const Scenario& scenario) {
  return nic_gbps_of(scenario, device_file_of(scenario));
}

topo::ClusterParams effective_cluster(const Scenario& scenario) {
  const std::optional<CalibrationFile> file = device_file_of(scenario);
  return cluster_of(scenario, gpu_of(scenario, file), nic_gbps_of(scenario, file));
}

DeviceModel device_model(const Scenario& scenario) {
  const std::optional<CalibrationFile> file = calibration_of(scenario);
  DeviceModel d;
  d.gpu = gpu_of(scenario, file);
  d.compute =
      scenario.gpu == kCalibratedGpu ? calibrated_device_defaults() : models::default_compute_calibration(d.gpu);
  d.fabric = scenario.fabric;
  d.collective = scenario.collective;
  if (file) file->apply(d.compute, d.fabric, &d.collective);
  d.cluster = cluster_of(scenario, d.gpu, nic_gbps_of(scenario, file));
  return d;
}

}  // namespace megasim::scenarios
