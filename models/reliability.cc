#include "models/reliability.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "sim/enum_names.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

constexpr double kSecondsPerHour = 3600.0;

constexpr sim::EnumNames<FlapDurations, 2> kFlapDurationNames{{
    {"exponential", FlapDurations::kExponential},
    {"fixed", FlapDurations::kFixed},
}};

constexpr sim::EnumNames<Detection, 2> kDetectionNames{{
    {"heartbeat", Detection::kHeartbeat},
    {"nccl_watchdog", Detection::kNcclWatchdog},
}};

void require(bool ok, std::string_view key, double value, std::string_view valid) {
  if (!ok) throw sim::ConfigError(std::string(key), fmt::format("{}", value), std::string(valid));
}

void require_non_negative(std::string_view key, double value) {
  require(std::isfinite(value) && value >= 0, key, value, "a finite number >= 0");
}

struct Builder {
  const FailureParams& p;
  std::vector<FailureProcess> out;

  void add(FailureProcess process, std::int64_t instances, double mtbf_h) {
    if (instances <= 0 || mtbf_h <= 0 || p.rate_scale <= 0) return;
    process.rate_per_s = static_cast<double>(instances) * p.rate_scale / (mtbf_h * kSecondsPerHour);
    out.push_back(process);
  }
};

}  // namespace

std::string_view to_string(Component c) {
  switch (c) {
    case Component::kGpu:
      return "gpu";
    case Component::kHbm:
      return "hbm";
    case Component::kHost:
      return "host";
    case Component::kNic:
      return "nic";
    case Component::kLink:
      return "link";
    case Component::kSwitch:
      return "switch";
    case Component::kSoftware:
      return "software";
  }
  return "?";
}

std::string_view to_string(FabricTier t) {
  switch (t) {
    case FabricTier::kNic:
      return "nic";
    case FabricTier::kTorAgg:
      return "tor_agg";
    case FabricTier::kAggCore:
      return "agg_core";
  }
  return "?";
}

std::string_view to_string(FlapDurations d) {
  return sim::enum_name(kFlapDurationNames, d);
}

FlapDurations parse_flap_durations(std::string_view text, std::string_view key) {
  return sim::parse_enum(kFlapDurationNames, text, key);
}

std::string_view to_string(Detection d) {
  return sim::enum_name(kDetectionNames, d);
}

Detection parse_detection(std::string_view text, std::string_view key) {
  return sim::parse_enum(kDetectionNames, text, key);
}

void validate(const FailureParams& p) {
  require_non_negative("failures.gpu_mtbf_h", p.gpu_mtbf_h);
  require_non_negative("failures.hbm_mtbf_h", p.hbm_mtbf_h);
  require_non_negative("failures.host_mtbf_h", p.host_mtbf_h);
  require_non_negative("failures.nic_mtbf_h", p.nic_mtbf_h);
  require_non_negative("failures.link_mtbf_h", p.link_mtbf_h);
  require_non_negative("failures.switch_mtbf_h", p.switch_mtbf_h);
  require_non_negative("failures.software_mtbf_h", p.software_mtbf_h);
  require_non_negative("failures.link_flap_mtbf_h", p.link_flap_mtbf_h);
  require(std::isfinite(p.link_flap_duration_s) && p.link_flap_duration_s > 0, "failures.link_flap_duration_s",
          p.link_flap_duration_s, "a finite duration > 0");
  require_non_negative("failures.link_repair_h", p.link_repair_h);
  require_non_negative("failures.switch_repair_h", p.switch_repair_h);
  require_non_negative("failures.host_repair_h", p.host_repair_h);
  require_non_negative("failures.rate_scale", p.rate_scale);
}

void validate(const RecoveryParams& p) {
  require_non_negative("recovery.heartbeat_interval_s", p.heartbeat_interval_s);
  if (p.heartbeat_misses < 1 || p.heartbeat_misses > 1000) {
    throw sim::ConfigError("recovery.heartbeat_misses", std::to_string(p.heartbeat_misses), "an integer in [1, 1000]");
  }
  require_non_negative("recovery.nccl_watchdog_s", p.nccl_watchdog_s);
  require_non_negative("recovery.switch_notification_s", p.switch_notification_s);
  require_non_negative("recovery.diagnosis_s", p.diagnosis_s);
  if (p.spare_hosts < 0) {
    throw sim::ConfigError("recovery.spare_hosts", std::to_string(p.spare_hosts), "an integer >= 0");
  }
  require_non_negative("recovery.replace_s", p.replace_s);
  require_non_negative("recovery.restart_s", p.restart_s);
  require_non_negative("recovery.comm_init_s_per_gpu", p.comm_init_s_per_gpu);
}

void validate(const CheckpointParams& p) {
  require(std::isfinite(p.interval_s) && p.interval_s > 0, "checkpoint.interval_s", p.interval_s,
          "a finite duration > 0");
  require_non_negative("checkpoint.save_blocking_s", p.save_blocking_s);
  require_non_negative("checkpoint.upload_s", p.upload_s);
  require_non_negative("checkpoint.load_s", p.load_s);
}

std::vector<FailureProcess> failure_processes(const FailureParams& p, const ClusterInventory& inv) {
  Builder b{p, {}};
  const double host_repair_s = p.host_repair_h * kSecondsPerHour;
  const double link_repair_s = p.link_repair_h * kSecondsPerHour;
  const double switch_repair_s = p.switch_repair_h * kSecondsPerHour;
  const auto fail_job = [](std::string_view name, Component c, bool network, std::int64_t hosts, double repair_s) {
    return FailureProcess{name, c, FailureEffect::kFailJob, FabricTier::kNic, network, 0, hosts, repair_s};
  };
  const auto fabric = [](std::string_view name, Component c, FailureEffect e, FabricTier tier, double repair_s) {
    return FailureProcess{name, c, e, tier, true, 0, 0, repair_s};
  };
  b.add(fail_job("gpu", Component::kGpu, false, 1, host_repair_s), inv.gpus, p.gpu_mtbf_h);
  b.add(fail_job("hbm", Component::kHbm, false, 1, host_repair_s), inv.gpus, p.hbm_mtbf_h);
  b.add(fail_job("host", Component::kHost, false, 1, host_repair_s), inv.hosts, p.host_mtbf_h);
  b.add(fail_job("nic", Component::kNic, true, 1, host_repair_s), inv.nics, p.nic_mtbf_h);
  // A NIC cable has no alternative path: the job fails and the host leaves until the cable is fixed.
  b.add(fail_job("link.nic", Component::kLink, true, 1, link_repair_s), inv.cables[0], p.link_mtbf_h);
  b.add(fabric("link.tor_agg", Component::kLink, FailureEffect::kDamage, FabricTier::kTorAgg, link_repair_s),
        inv.cables[1], p.link_mtbf_h);
  b.add(fabric("link.agg_core", Component::kLink, FailureEffect::kDamage, FabricTier::kAggCore, link_repair_s),
        inv.cables[2], p.link_mtbf_h);
  // A rail ToR takes one NIC of each of its hosts with it: they all leave until it is repaired.
  b.add(fail_job("switch.tor", Component::kSwitch, true, inv.hosts_per_tor, switch_repair_s), inv.switches[0],
        p.switch_mtbf_h);
  b.add(fabric("switch.agg", Component::kSwitch, FailureEffect::kDamage, FabricTier::kTorAgg, switch_repair_s),
        inv.switches[1], p.switch_mtbf_h);
  b.add(fabric("switch.core", Component::kSwitch, FailureEffect::kDamage, FabricTier::kAggCore, switch_repair_s),
        inv.switches[2], p.switch_mtbf_h);
  b.add(fail_job("software", Component::kSoftware, false, 0, 0), inv.gpus, p.software_mtbf_h);
  b.add(fabric("flap.nic", Component::kLink, FailureEffect::kFlap, FabricTier::kNic, 0), inv.cables[0],
        p.link_flap_mtbf_h);
  b.add(fabric("flap.tor_agg", Component::kLink, FailureEffect::kFlap, FabricTier::kTorAgg, 0), inv.cables[1],
        p.link_flap_mtbf_h);
  b.add(fabric("flap.agg_core", Component::kLink, FailureEffect::kFlap, FabricTier::kAggCore, 0), inv.cables[2],
        p.link_flap_mtbf_h);
  return b.out;
}

double comm_init_s(const RecoveryParams& r, std::int64_t gpus) {
  return r.comm_init_s_per_gpu * static_cast<double>(gpus);
}

}  // namespace megasim::models
