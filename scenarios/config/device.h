// The device a scenario's ranks run on and the cost model's parameters for it: a GPU of gpus.csv
// with the public defaults, or, with cluster.gpu = "calibrated", the machine a calibration file's
// [device] section describes (a CPU measured by `megasim calibrate --backend cpu`); in both cases
// the calibration file's [compute], [network] and [collective] sections apply over the defaults.
#pragma once

#include <string_view>

#include "backend/sim/fabric_params.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/config/scenario.h"
#include "topology/cluster_params.h"

namespace megasim::scenarios {

inline constexpr std::string_view kCalibratedGpu = "calibrated";

// cluster.gpu's spec. Throws sim::ConfigError("cluster.gpu") for "calibrated" without a calibration
// file that has a [device] section.
models::GpuSpec scenario_gpu(const Scenario& scenario);

// The NIC of a server of gpus.csv GPUs when the scenario names none: MegaScale's 200 Gb/s
// (topology/cluster_params.h).
inline constexpr double kDefaultNicGbps = 200;
// The NIC speed of the scenario's cluster, Gb/s each way, as intra_node_gbytes_per_s gives the
// NVLink rate: cluster.nic_gbps when set (> 0); else, for a calibrated device whose file has
// inter_node_gbytes_per_s (measured between hosts), that rate x 8; else kDefaultNicGbps.
double scenario_nic_gbps(const Scenario& scenario);

struct DeviceModel {
  models::GpuSpec gpu;
  models::ComputeCalibration compute;
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  topo::ClusterParams cluster;  // effective_cluster (scenario.h): the link rates resolved
};

// Where a calibrated device's compute calibration starts, before its file's measurements replace
// fields: GEMM efficiency 1 (of its peak, which is its best measured GEMM), one "SM" and a 1 x 1
// tile (no wave or tile quantisation on a CPU), no k overhead, memory and FlashAttention
// efficiencies 1, no launch overhead, no SMs taken by communication.
models::ComputeCalibration calibrated_device_defaults();

// The GPU, its compute calibration, the scenario's fabric and collective parameters with the
// calibration file applied (over calibrated_device_defaults for a calibrated device, over the GPU's
// public defaults otherwise), and the effective cluster: the scenario resolved against its device,
// the calibration file read and parsed once. A study resolves the device once and hands it on.
DeviceModel device_model(const Scenario& scenario);

}  // namespace megasim::scenarios
