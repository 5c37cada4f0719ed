// Campaign engine tests: configurations with one failure process, instant detection and fixed
// costs, and an oracle of closed forms (no iteration simulation).
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "scenarios/studies/campaign/campaign_engine.h"

namespace megasim::scenarios::testing {

inline constexpr double kDay = 86400.0;

// A job-ending process of `rate_per_s` that evicts `hosts` hosts, back after repair_s.
inline models::FailureProcess job_failure(double rate_per_s, std::int64_t hosts = 0, double repair_s = 0,
                                          std::string_view name = "gpu") {
  return {name,
          models::Component::kGpu,
          models::FailureEffect::kFailJob,
          models::FabricTier::kNic,
          false,
          rate_per_s,
          hosts,
          repair_s};
}

inline models::FailureProcess flap(double rate_per_s, models::FabricTier tier) {
  return {"flap.nic", models::Component::kLink, models::FailureEffect::kFlap, tier, true, rate_per_s, 0, 0};
}

// Instant detection, no diagnosis, replacement, restart or load, no upload: every cost is zero until
// a test sets it.
inline CampaignConfig fixed_cost_config(double horizon_s) {
  CampaignConfig c;
  c.horizon_s = horizon_s;
  c.recovery.detection = models::Detection::kHeartbeat;
  c.recovery.heartbeat_interval_s = 0;
  c.recovery.diagnosis_s = 0;
  c.recovery.spare_hosts = 1'000'000;
  c.recovery.replace_s = 0;
  c.recovery.restart_s = 0;
  c.recovery.comm_init_s_per_gpu = 0;
  c.checkpoint.upload_s = 0;
  c.checkpoint.load_s = 0;
  c.checkpoint.save_blocking_s = 0;
  c.job_gpus = 8;
  return c;
}

// Iterations of healthy_s (damaged_s with any damage); a downed cable stalls its flows for the whole
// outage on a NIC cable (no alternative path) and for at most detection_s elsewhere (re-routed), as
// backend/sim/fabric does.
inline CampaignOracle closed_form_oracle(double healthy_s = 1.0, double damaged_s = 1.0, double detection_s = 0.05) {
  CampaignOracle o;
  o.iteration_time_s = [=](const FabricDamage& d) { return d.healthy() ? healthy_s : damaged_s; };
  o.stall_s = [=](models::FabricTier tier, double down_s) {
    return tier == models::FabricTier::kNic ? down_s : std::min(down_s, detection_s);
  };
  return o;
}

struct SeedStats {
  double mean = 0;
  double sd = 0;  // sample standard deviation over seeds
};

inline SeedStats ettr_over_seeds(const CampaignConfig& c, const CampaignOracle& o, int seeds) {
  std::vector<double> e;
  for (int i = 0; i < seeds; ++i)
    e.push_back(run_campaign_seed(c, o, 1000 + static_cast<std::uint64_t>(i), false).ettr);
  SeedStats s;
  for (const double x : e) s.mean += x / seeds;
  for (const double x : e) s.sd += (x - s.mean) * (x - s.mean) / (seeds - 1);
  s.sd = std::sqrt(s.sd);
  return s;
}

inline double lost(const SeedOutcome& o, LostCause c) {
  return o.lost_s[static_cast<std::size_t>(c)];
}

}  // namespace megasim::scenarios::testing
