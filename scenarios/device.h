// The device a scenario's ranks run on and the cost model's parameters for it: a GPU of gpus.csv
// with the public defaults, or, with cluster.gpu = "calibrated", the machine a calibration file's
// [device] section describes (a CPU measured by `megasim calibrate --backend cpu`); in both cases
// the calibration file's [compute], [network] and [collective] sections apply over the defaults.
#pragma once

#include <string_view>

#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/scenario.h"

namespace megasim::scenarios {

inline constexpr std::string_view kCalibratedGpu = "calibrated";

// cluster.gpu's spec. Throws sim::ConfigError("cluster.gpu") for "calibrated" without a calibration
// file that has a [device] section.
models::GpuSpec scenario_gpu(const Scenario& scenario);

struct DeviceModel {
  models::GpuSpec gpu;
  models::ComputeCalibration compute;
  backend::FabricParams fabric;
  models::CollectiveParams collective;
};

// The GPU, its compute calibration and the scenario's fabric and collective parameters, with the
// calibration file applied. A calibrated device starts from neutral defaults that the file's
// measurements replace: GEMM efficiency 1 (of its peak, which is its best measured GEMM), one
// "SM" and a 1 x 1 tile (no wave or tile quantisation on a CPU), no k overhead, memory efficiency 1,
// no launch overhead.
DeviceModel device_model(const Scenario& scenario);

}  // namespace megasim::scenarios
