// The physical parameters `megasim calibrate --measured` may fit to measured iteration times: each
// a field of the cost model's device parameters (models/compute_cost.h ComputeCalibration,
// backend/sim/fabric_params.h FabricParams) with its calibration-file key (calibration_file.h),
// physical bounds and a one-line meaning. One table, so that --fit, --help, the fitted file and
// the docs name the same things.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/device.h"

namespace megasim::scenarios {

struct CalibrationParameter {
  std::string_view name;     // what --fit takes; also the key in the file's section
  std::string_view section;  // "compute" or "network": the calibration file's [section]
  std::string_view unit;     // "" when dimensionless
  double lower = 0;          // physical bounds, in the file's unit
  double upper = 0;
  std::string_view meaning;
  // The value in the file's unit (launch_overhead_us in microseconds, stored as nanoseconds).
  std::function<double(const DeviceModel&)> get;
  std::function<void(DeviceModel&, double)> set;
};

// In the order --help lists them.
const std::vector<CalibrationParameter>& calibration_parameters();

// Throws sim::ConfigError("--fit", name, the valid names) for a name not in the table.
const CalibrationParameter& find_calibration_parameter(std::string_view name);

// The default --fit: the GEMM efficiency (most of a dense transformer's time), the NVLink
// efficiency (its tensor-parallel all-reduces) and the network efficiency (its data-parallel
// all-reduces over the NICs).
std::vector<std::string> default_fit_parameters();

// "name [lower, upper] unit: meaning" per line, for --help and the docs.
std::string describe_calibration_parameters();

}  // namespace megasim::scenarios
