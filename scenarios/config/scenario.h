// The Scenario: plain structs describing one study's inputs. TOML files, `--set` overrides and
// Python all build this same struct; nothing below scenarios/ sees a toml:: type.
#pragma once

#include <cstdint>
#include <string>

#include "backend/sim/fabric_params.h"
#include "models/collective.h"
#include "models/model_spec.h"
#include "models/plan.h"
#include "models/reliability.h"
#include "models/stragglers.h"
#include "topology/cluster_params.h"
#include "topology/placement.h"

namespace megasim::scenarios {

// The defaults describe MegaScale's 175B model (Jiang et al., NSDI'24, Table 1 and
// ../shared/calibration/megascale_setup.md) as Megatron-LM would run it on 1,024 A100s: TP=8 inside
// a server, PP=8 with 6 virtual stages per rank (2 layers each), sequence parallelism, selective
// recompute, the distributed optimizer, micro-batch 1 and the strong-scaling global batch of 768.
struct Scenario {
  Scenario();

  std::string name = "default";
  // The file the scenario was read from, as given to load_scenario_file; "" when it was not read from
  // a file (the defaults, TOML text, a Python dict). Not a key: report.json's provenance.
  std::string source_file;
  std::uint64_t seed = 1;             // master seed; every random stream derives from it by name
  std::string gpu = "A100-SXM-80GB";  // a name of models::known_gpus(), or "calibrated" (device.h)
  topo::ClusterParams cluster;        // nvlink_gbytes_per_s = 0, nic_gbps = 0 mean: from the device
  topo::PlacementPolicy placement = topo::PlacementPolicy::kContiguous;  // rank -> GPU
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  models::ModelSpec model;
  models::ParallelPlan plan;
  // A calibration file (scenarios/config/calibration_file.h) replacing the cost model's public
  // defaults; empty: the defaults. Relative to the scenario file's folder when set in a file, else
  // to the current directory.
  std::string calibration_file;
  // Slow hosts and GPUs, jitter, pauses and sequence-length imbalance (models/stragglers.h).
  models::StragglerParams stragglers;
  // Campaigns (megasim campaign): failure processes, recovery, checkpoints.
  models::FailureParams failures;
  models::RecoveryParams recovery;
  models::CheckpointParams checkpoint;
};

struct DeviceModel;  // device.h

// Checks the cluster, GPU (and calibration file), fabric, collective and model sections (throws
// sim::ConfigError naming the first bad key). The plan is checked where a study needs it
// (models::resolve_plan), since a fabric-only study must not fail on a plan it does not use.
void validate(const Scenario& scenario);
// The same with the scenario's device already resolved (device_model(scenario)).
void validate(const Scenario& scenario, const DeviceModel& device);

// The cluster parameters with the device-derived defaults filled in: NVLink bandwidth each way is
// half the GPU's total NVLink bandwidth when cluster.nvlink_gbytes_per_s is 0, and the NIC speed
// scenario_nic_gbps (device.h) when cluster.nic_gbps is 0. Defined in device.cc; DeviceModel::cluster
// is the same, for a study that has resolved the device.
topo::ClusterParams effective_cluster(const Scenario& scenario);

// Rank -> GPU for the scenario's plan and placement policy (the scatter uses the named stream
// "placement.scatter" of the scenario's seed).
topo::Placement plan_placement(const Scenario& scenario, const topo::Topology& topology, std::int64_t tensor,
                               std::int64_t data, std::int64_t pipeline);

}  // namespace megasim::scenarios
