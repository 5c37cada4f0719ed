// Calibration files: measured efficiencies that replace the public defaults of the cost model
// (DESIGN.md "Compute"). A scenario names one with `[calibration] file = "PATH"`; `megasim
// calibrate` (a real backend) writes them. Every field is optional; absent ones keep the defaults.
//
//   [compute]
//   best_gemm_efficiency = 0.80            # large-GEMM FLOP/s over peak
//   gemm_k_overhead = 153                  # per-tile fixed cost in k steps
//   memory_efficiency = 0.85               # fraction of HBM bandwidth for elementwise kernels
//   flash_attention_forward_efficiency = 0.65
//   flash_attention_backward_efficiency = 0.55
//   launch_overhead_us = 4.0
//   gemm_points = [ { m = 8192, n = 2304, k = 6144, efficiency = 0.71 } ]   # measured GEMMs
//
//   [network]
//   nvlink_efficiency = 0.77               # achieved fraction of NVLink bandwidth (busbw / line rate)
//   network_efficiency = 0.96              # achieved fraction of NIC/switch bandwidth
#pragma once

#include <string>

#include "backend/sim/fabric.h"
#include "models/compute_cost.h"

namespace megasim::scenarios {

// Applies the file's fields over `compute` and `fabric`. Throws sim::ConfigError naming the file and
// the key ("calibration.compute.best_gemm_efficiency") for unknown keys, wrong types, out-of-range
// values or an unreadable file.
void apply_calibration_file(const std::string& path, models::ComputeCalibration& compute,
                            backend::FabricParams& fabric);
// The same from TOML text (`source` names it in messages).
void apply_calibration_text(std::string_view toml_text, std::string_view source, models::ComputeCalibration& compute,
                            backend::FabricParams& fabric);

}  // namespace megasim::scenarios
