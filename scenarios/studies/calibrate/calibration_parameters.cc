#include "scenarios/studies/calibrate/calibration_parameters.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

// An efficiency below 5% of peak is a broken kernel or link, not a calibration; 1 is the peak.
constexpr double kMinFittedEfficiency = 0.05;

CalibrationParameter compute_efficiency(std::string_view name, std::string_view meaning,
                                        double models::ComputeCalibration::*field) {
  return {name,
          "compute",
          "",
          kMinFittedEfficiency,
          1.0,
          meaning,
          [field](const DeviceModel& d) { return d.compute.*field; },
          [field](DeviceModel& d, double v) { d.compute.*field = v; }};
}

CalibrationParameter network_efficiency(std::string_view name, std::string_view meaning,
                                        double backend::FabricParams::*field) {
  return {name,
          "network",
          "",
          kMinFittedEfficiency,
          1.0,
          meaning,
          [field](const DeviceModel& d) { return d.fabric.*field; },
          [field](DeviceModel& d, double v) { d.fabric.*field = v; }};
}

std::vector<CalibrationParameter> build_table() {
  using C = models::ComputeCalibration;
  std::vector<CalibrationParameter> t;
  t.push_back(compute_efficiency("best_gemm_efficiency", "large-GEMM FLOP/s over the GPU's bf16 peak",
                                 &C::best_gemm_efficiency));
  // The default is the ridge point, peak / HBM bandwidth (about 150 on an A100, 300 on an H100);
  // 2048 k steps would make a k = 2048 GEMM run at half its large-k speed.
  t.push_back({"gemm_k_overhead", "compute", "k steps", 0.0, 2048.0,
               "per-tile fixed cost of a GEMM kernel, in k steps of its main loop",
               [](const DeviceModel& d) { return d.compute.gemm_k_overhead; },
               [](DeviceModel& d, double v) { d.compute.gemm_k_overhead = v; }});
  t.push_back(compute_efficiency("memory_efficiency", "fraction of HBM bandwidth elementwise kernels reach",
                                 &C::memory_efficiency));
  t.push_back(compute_efficiency("flash_attention_forward_efficiency", "FlashAttention-2 forward FLOP/s over peak",
                                 &C::flash_attention_forward_efficiency));
  t.push_back(compute_efficiency("flash_attention_backward_efficiency", "FlashAttention-2 backward FLOP/s over peak",
                                 &C::flash_attention_backward_efficiency));
  t.push_back(compute_efficiency("flash_attention_1_forward_efficiency", "FlashAttention-1 forward FLOP/s over peak",
                                 &C::flash_attention_1_forward_efficiency));
  t.push_back(compute_efficiency("flash_attention_1_backward_efficiency", "FlashAttention-1 backward FLOP/s over peak",
                                 &C::flash_attention_1_backward_efficiency));
  // An eager PyTorch stream pays 3-5 us per kernel (compute_calibration.cc); 100 us is a host that
  // cannot keep any GPU busy.
  t.push_back({"launch_overhead_us", "compute", "us", 0.0, 100.0, "host launch and gap paid once per kernel",
               [](const DeviceModel& d) { return static_cast<double>(d.compute.launch_overhead_ns) / 1e3; },
               [](DeviceModel& d, double v) { d.compute.launch_overhead_ns = std::llround(v * 1e3); }});
  t.push_back({"comm_sm_fraction", "compute", "", 0.0, 0.9,
               "share of the SMs an overlapped intra-server collective takes from concurrent GEMMs",
               [](const DeviceModel& d) { return d.compute.comm_sm_fraction; },
               [](DeviceModel& d, double v) { d.compute.comm_sm_fraction = v; }});
  t.push_back(network_efficiency("nvlink_efficiency", "achieved fraction of NVLink bandwidth (busbw / line rate)",
                                 &backend::FabricParams::nvlink_efficiency));
  t.push_back(network_efficiency("network_efficiency", "achieved fraction of NIC and switch link bandwidth",
                                 &backend::FabricParams::network_efficiency));
  return t;
}

}  // namespace

const std::vector<CalibrationParameter>& calibration_parameters() {
  static const std::vector<CalibrationParameter> table = build_table();
  return table;
}

const CalibrationParameter& find_calibration_parameter(std::string_view name) {
  for (const CalibrationParameter& p : calibration_parameters()) {
    if (p.name == name) return p;
  }
  std::string names;
  for (const CalibrationParameter& p : calibration_parameters())
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  throw sim::ConfigError("--fit", std::string(name), "parameter names from: " + names);
}

std::vector<std::string> default_fit_parameters() {
  return {"best_gemm_efficiency", "nvlink_efficiency", "network_efficiency"};
}

std::string describe_calibration_parameters() {
  std::string out;
  for (const CalibrationParameter& p : calibration_parameters()) {
    out += fmt::format("  {} [{:g}, {:g}]{}{}: {}\n", p.name, p.lower, p.upper, p.unit.empty() ? "" : " ", p.unit,
                       p.meaning);
  }
  return out;
}

}  // namespace megasim::scenarios
