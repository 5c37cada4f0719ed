// Reliability parameters of a training cluster: per-component failure processes, link flaps, the
// recovery sequence (detection, diagnosis, eviction and replacement from a spare pool, restart,
// checkpoint load) and checkpointing. The defaults are public numbers; each names its source
// (../shared/calibration/ is not in this repository, so the rows used are transcribed here).
//
// Failure model: every component instance fails as a Poisson process (exponential times between
// failures, memoryless, so the cluster's failures of one kind are one Poisson process with rate
// instances / MTBF). What a failure does depends on the component and where it sits:
//  - GPU, HBM, host, NIC, and a NIC cable (GPU NIC <-> rail ToR, which has no alternative path): the
//    job fails and the host is evicted and replaced from the spare pool;
//  - a ToR switch: the job fails and every host with a NIC under it (servers_per_group hosts) is
//    evicted;
//  - software: the job fails and restarts on the same hosts;
//  - a switch-to-switch cable or an aggregation or core switch: its flows stall until the fabric
//    detects the failure (fabric.failure_detection_s), then move to the other equal-cost paths; the
//    job runs on, at the iteration time of the damaged fabric, until the part is repaired;
//  - a link flap: the cable goes down for a while and comes back. Its flows stall (backend/sim/fabric:
//    until the flap ends, or until detection when an alternative path exists); a stall longer than
//    the NCCL timeout (fabric.stall_timeout_s, 0: never) fails the job.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace megasim::models {

enum class Component : std::uint8_t { kGpu, kHbm, kHost, kNic, kLink, kSwitch, kSoftware };
inline constexpr std::size_t kComponentCount = 7;
inline constexpr std::array<Component, kComponentCount> kComponents{
    Component::kGpu,  Component::kHbm,    Component::kHost,    Component::kNic,
    Component::kLink, Component::kSwitch, Component::kSoftware};
std::string_view to_string(Component c);  // "gpu", "hbm", "host", "nic", "link", "switch", "software"

// Where a cable or switch sits: kNic is a NIC cable or a rail ToR, kTorAgg a ToR-aggregation cable or
// an aggregation switch, kAggCore an aggregation-core cable or a core switch.
enum class FabricTier : std::uint8_t { kNic, kTorAgg, kAggCore };
inline constexpr std::size_t kFabricTierCount = 3;
std::string_view to_string(FabricTier t);  // "nic", "tor_agg", "agg_core"

enum class FlapDurations : std::uint8_t { kExponential, kFixed };
std::string_view to_string(FlapDurations d);
FlapDurations parse_flap_durations(std::string_view text, std::string_view key);

enum class Detection : std::uint8_t {
  kHeartbeat,     // a daemon per node reports process status and RDMA traffic (MegaScale, NSDI'24)
  kNcclWatchdog,  // nothing but the collective timeout notices (the job hangs until it fires)
};
std::string_view to_string(Detection d);
Detection parse_detection(std::string_view text, std::string_view key);

// Mean time between failures of one instance, in hours; 0: never fails. Defaults from Llama 3 (Dubey
// et al. 2024, Table 5): 419 unexpected interruptions in 54 days (1,296 h) on 16,384 H100 GPUs in
// 2,048 hosts with one NIC per GPU (failures_llama3.csv), i.e. 21,233,664 GPU-hours and 2,654,208
// host-hours. Each row of that table is counted once, under the component named here.
struct FailureParams {
  // "Faulty GPU" 148 + "GPU SRAM Memory" 19 + "GPU System Processor" 17 + "Silent Data Corruption" 6
  // + "GPU Thermal Interface + Sensor" 6 = 196 per 21,233,664 GPU-hours.
  double gpu_mtbf_h = 108335.0;
  // "GPU HBM3 Memory" 72 per 21,233,664 GPU-hours (one HBM instance per GPU: its stacks).
  double hbm_mtbf_h = 294912.0;
  // "Host Maintenance" (unplanned) 32 + "SSD" 3 + "Power Supply" 3 + "Server Chassis" 2 + "IO
  // Expansion Board" 2 + "CPU" 2 + "System Memory" 2 = 46 per 2,654,208 host-hours.
  double host_mtbf_h = 57700.2;
  // "NIC" 7 per 21,233,664 NIC-hours.
  double nic_mtbf_h = 3033381.0;
  // "Network Switch/Cable" 35 per 54 days, which the data do not split between cables and switches:
  // spread evenly over the 32,768 network cables and 1,536 switches of a MegaScale-style 3-tier Clos
  // of 16,384 GPUs (`megasim topo --gpus 16384`): 34,304 x 1,296 h / 35 per instance.
  double link_mtbf_h = 1270228.0;
  double switch_mtbf_h = 1270228.0;
  // "Software Bug" 54 + "Dependency" 2 + "NCCL Watchdog Timeouts" 7 (cause unknown; they end the job
  // the way a software hang does) = 63 per 21,233,664 GPU-hours, per GPU process.
  double software_mtbf_h = 337042.3;
  // Per network cable. No public per-link flap rate; ByteRobust (SOSP'25, Table 1,
  // failures_byterobust.csv) counts 1,599 "Infiniband Error" incidents against 19,968 "CUDA Error"
  // ones (ratio 0.080078). Taking the former as flaps and the latter at Llama 3's GPU rate (196 per
  // 21,233,664 GPU-hours) gives 7.39e-7 flaps per GPU-hour, over 2 network cables per GPU (the Clos
  // above): 2 x 108,335.02 h / 0.080078 per cable.
  double link_flap_mtbf_h = 2705733.0;
  // "Down for several seconds" (MegaScale, NSDI'24; ../shared/calibration/megascale_setup.md).
  double link_flap_duration_s = 5.0;
  FlapDurations link_flap_durations = FlapDurations::kExponential;  // mean link_flap_duration_s, or fixed
  // Time from a failure until the part is back in service (repaired or swapped). Not published by
  // MegaScale, Llama 3 or ByteRobust; assumptions of this model, meant to be overridden.
  double link_repair_h = 4.0;
  double switch_repair_h = 4.0;
  double host_repair_h = 24.0;
  // Multiplies every failure and flap rate (what-if studies: 2 = twice as many failures).
  double rate_scale = 1.0;
};

struct RecoveryParams {
  Detection detection = Detection::kHeartbeat;
  // Heartbeat: a failure at a uniform phase of the interval is noticed after heartbeat_misses missed
  // beats: (misses - 1 + U) x interval, U uniform in [0, 1); interval 0: at once. MegaScale does not
  // publish its interval; ByteRobust's active inspection notices a lost GPU in 10 s, a NIC crash or
  // port flap in 30 s, a switch down in 60 s; 10 s x 3 misses sits inside that range.
  double heartbeat_interval_s = 10.0;
  std::int64_t heartbeat_misses = 3;
  // The collective watchdog (PyTorch's ProcessGroupNCCL timeout: 10 min since PyTorch 2.2; ByteRobust
  // reports 30-60 min in production). Only used with detection = nccl_watchdog.
  double nccl_watchdog_s = 600.0;
  // Switches report link and port events to the job (ByteDance's EthLink proposal: within
  // milliseconds): network failures are then detected switch_notification_s after they happen.
  bool switch_notification = false;
  double switch_notification_s = 0.005;
  // Stop-time diagnosis: loopback and RNIC-to-RNIC tests, intra-node NCCL all-to-all, all-reduce
  // with the ToR neighbours (MegaScale, NSDI'24). MegaScale reports detection plus diagnosis under
  // 10 minutes on average; 5 minutes here is an assumption inside that bound.
  double diagnosis_s = 300.0;
  // Hosts kept ready to replace evicted ones (not published; an assumption). The job waits while the
  // pool holds fewer than it needs; an evicted host rejoins the pool host_repair_h after failing.
  std::int64_t spare_hosts = 16;
  double replace_s = 60.0;  // schedule a spare, pull the image, start the pod (assumption)
  double restart_s = 60.0;  // launch the processes, CUDA context, framework start (assumption)
  // Communicator initialisation = comm_init_s_per_gpu x GPUs. MegaScale (NSDI'24) reports under 5
  // s on 2,048 GPUs once global barriers were removed (O(n) work) and under 30 s beyond 10,000 GPUs;
  // a line through the origin meeting both bounds: 5 s / 2,048 GPUs (30 s at 12,288 GPUs).
  double comm_init_s_per_gpu = 5.0 / 2048.0;
};

struct CheckpointParams {
  // Training time between saves, rounded to whole iterations (at least one). MegaScale caught up
  // with the pre-crash progress within 15 minutes of loading the latest checkpoint, so it lost at
  // most about 15 minutes of work: an interval of 15 minutes.
  double interval_s = 900.0;
  // GPU -> host memory, blocking. MegaScale: "several seconds"; ByteRobust measures 6.8-13 s for
  // Megatron's save on 70B-256B models and 2k-16k GPUs.
  double save_blocking_s = 10.0;
  // Host -> remote storage in the background; the checkpoint counts only when it is done, and a job
  // failure before that discards it (assumption: 2.45 TB of 175B state at ~20 GB/s aggregate).
  double upload_s = 120.0;
  // Read and broadcast on restart (assumption of the same order: one reader per model shard).
  double load_s = 60.0;
};

// Throw sim::ConfigError naming the "failures.", "recovery." or "checkpoint." key of a bad value.
void validate(const FailureParams& p);
void validate(const RecoveryParams& p);
void validate(const CheckpointParams& p);

// The job's component instances (from the topology: scenarios/studies/campaign/campaign_study.cc).
struct ClusterInventory {
  std::int64_t gpus = 0;
  std::int64_t hosts = 0;
  std::int64_t nics = 0;
  std::array<std::int64_t, kFabricTierCount> cables{};    // network cables per tier
  std::array<std::int64_t, kFabricTierCount> switches{};  // ToRs, aggregation, core switches
  std::int64_t hosts_per_tor = 0;                         // hosts with a NIC under one rail ToR
};

// What a failure does to the job.
enum class FailureEffect : std::uint8_t {
  kFailJob,  // the job fails; `evicted_hosts` hosts are replaced from the spare pool (may be 0)
  kDamage,   // the part leaves the fabric until repaired; its flows stall, then move
  kFlap,     // the cable is down for a flap duration, then back
};

// One Poisson process of the cluster: every instance of one kind in one place.
struct FailureProcess {
  std::string_view name;  // "gpu", "link.nic", "switch.tor", "flap.agg_core", ... (its RNG stream)
  Component component;
  FailureEffect effect;
  FabricTier tier = FabricTier::kNic;  // links, switches, flaps
  bool network = false;                // detected by switch notification when that is on
  double rate_per_s = 0;               // instances x rate_scale / MTBF
  std::int64_t evicted_hosts = 0;      // kFailJob
  double repair_s = 0;                 // kFailJob: until the evicted hosts rejoin the pool; kDamage: until repaired
};

// Every process with a positive rate, in a fixed order (components, then tiers).
std::vector<FailureProcess> failure_processes(const FailureParams& p, const ClusterInventory& inventory);

// Seconds of communicator initialisation for a job of `gpus` GPUs.
double comm_init_s(const RecoveryParams& r, std::int64_t gpus);

}  // namespace megasim::models
