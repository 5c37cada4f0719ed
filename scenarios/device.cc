#include "scenarios/device.h"

#include <optional>
#include <string>

#include "scenarios/calibration_file.h"
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

models::GpuSpec scenario_gpu(const Scenario& scenario) {
  if (scenario.gpu != kCalibratedGpu) return models::find_gpu(scenario.gpu, "cluster.gpu");
  const std::string valid =
      "a GPU of gpus.csv, or \"calibrated\" with a calibration.file that has a [device] section "
      "(megasim calibrate --backend cpu writes one)";
  if (scenario.calibration_file.empty()) throw sim::ConfigError("cluster.gpu", std::string(kCalibratedGpu), valid);
  std::optional<models::GpuSpec> device = calibration_device(scenario.calibration_file);
  if (!device) {
    throw sim::ConfigError("cluster.gpu", std::string(kCalibratedGpu) + " (" + scenario.calibration_file + ")", valid);
  }
  return *device;
}

double scenario_nic_gbps(const Scenario& scenario) {
  if (scenario.cluster.nic_gbps != 0) return scenario.cluster.nic_gbps;
  if (scenario.gpu == kCalibratedGpu) {
    scenario_gpu(scenario);  // the errors of a calibrated device without a file or [device]
    const std::optional<CalibratedDevice> device = calibrated_device(scenario.calibration_file);
    if (device && device->inter_node_gbytes_per_s > 0) return device->inter_node_gbytes_per_s * 8;
  }
  return kDefaultNicGbps;
}

DeviceModel device_model(const Scenario& scenario) {
  DeviceModel d;
  d.gpu = scenario_gpu(scenario);
  d.compute =
      scenario.gpu == kCalibratedGpu ? calibrated_device_defaults() : models::default_compute_calibration(d.gpu);
  d.fabric = scenario.fabric;
  d.collective = scenario.collective;
  if (!scenario.calibration_file.empty()) {
    apply_calibration_file(scenario.calibration_file, d.compute, d.fabric, &d.collective);
  }
  return d;
}

}  // namespace megasim::scenarios
