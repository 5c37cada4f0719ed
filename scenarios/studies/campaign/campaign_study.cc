#include "scenarios/studies/campaign/campaign_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "models/checkpoint_theory.h"
#include "scenarios/studies/campaign/campaign_oracle.h"
#include "sim/error.h"
#include "sim/repeats.h"
#include "sim/rng.h"

namespace megasim::scenarios {
namespace {

constexpr double kSecondsPerDay = 86400.0;
constexpr double kMaxDays = 3650;
constexpr std::int64_t kMaxSeeds = 100'000;
// The drift's step (campaign_engine.h): the iteration time is re-read every 10 minutes of uptime.
// At the largest drift a scenario may ask for (100% per hour) that is a 17% change per step;
// at MegaScale-like rates (a fraction of a percent per hour) it is below 0.01%.
constexpr double kDriftStepS = 600;

void check_options(const CampaignOptions& o) {
  // At least a second: a shorter campaign (1e-300 days) has no time to train, only a zero ETTR.
  if (!(std::isfinite(o.days) && o.days * kSecondsPerDay >= 1 && o.days <= kMaxDays)) {
    throw sim::ConfigError("--days", fmt::format("{}", o.days), "a number of days from 1/86400 (a second) to 3650");
  }
  if (o.seeds < 1 || o.seeds > kMaxSeeds) {
    throw sim::ConfigError("--seeds", std::to_string(o.seeds), "an integer from 1 to 100000");
  }
  for (const double t : o.sweep_intervals_s) {
    if (!(std::isfinite(t) && t > 0)) throw sim::ConfigError("--intervals", fmt::format("{}", t), "intervals > 0 s");
  }
  if (const std::optional<std::size_t> k = sim::first_repeat(o.sweep_intervals_s)) {
    throw sim::ConfigError("--intervals", fmt::format("{}", o.sweep_intervals_s[*k]),
                           "each interval at most once (it is listed twice)");
  }
  // The intervals are those of the sweep: without it they would be ignored.
  if (!o.sweep && !o.sweep_intervals_s.empty()) {
    throw sim::ConfigError("--intervals", fmt::format("{}", fmt::join(o.sweep_intervals_s, ",")),
                           "no --intervals without --sweep-checkpoint-interval (they are the sweep's intervals; "
                           "the campaign itself checkpoints every checkpoint.interval_s)");
  }
}

// The probability that a flap of the configured durations outlasts `seconds`.
double flap_longer_than(const models::FailureParams& f, double seconds) {
  if (f.link_flap_durations == models::FlapDurations::kFixed) return f.link_flap_duration_s > seconds ? 1 : 0;
  return std::exp(-seconds / f.link_flap_duration_s);
}

// Rate of job failures: the processes that end the job, and the flaps and damage whose stall outlasts
// the NCCL timeout (stall = min(outage, the tier's longest stall)).
double job_failure_rate_per_s(const CampaignConfig& c, const IterationOracle& oracle) {
  double rate = 0;
  const double timeout = c.stall_timeout_s;
  for (const models::FailureProcess& p : c.processes) {
    const bool long_stalls = timeout > 0 && oracle.longest_stall_s(p.tier) > timeout;
    switch (p.effect) {
      case models::FailureEffect::kFailJob:
        rate += p.rate_per_s;
        break;
      case models::FailureEffect::kFlap:
        if (long_stalls) rate += p.rate_per_s * flap_longer_than(c.failures, timeout);
        break;
      case models::FailureEffect::kDamage:
        if (long_stalls) rate += p.rate_per_s;
        break;
    }
  }
  return rate;
}

std::uint64_t seed_of(const Scenario& s, std::int64_t index) {
  return sim::RngStreams(s.seed).stream_seed(fmt::format("campaign.seed.{}", index));
}

std::vector<double> sweep_grid(const CampaignOptions& o, const CampaignReport& r) {
  std::vector<double> grid = o.sweep_intervals_s;
  if (grid.empty()) {
    if (!std::isfinite(r.daly_interval_s) || r.daly_interval_s <= 0) {
      throw sim::ConfigError(
          "--sweep-checkpoint-interval",
          fmt::format("(Daly's interval is {} s: no job failures, or no save cost)", r.daly_interval_s),
          "a scenario whose failures end the job and whose saves cost time, or --intervals");
    }
    for (int k = -4; k <= 4; ++k) grid.push_back(r.daly_interval_s * std::exp2(k / 2.0));
    grid.push_back(r.young_interval_s);
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

// The first pass: every seed with a constant iteration time, recording the damaged states and the
// longest uptime reached; then the healthy state, those and the drift knots are simulated, in
// parallel. (Uptimes in the real pass differ a little, as saves take other moments; the oracle
// simulates a knot missed here when it is first asked for.)
void simulate_reached_states(const CampaignConfig& config, const CampaignOptions& o, const Scenario& s,
                             IterationOracle& oracle) {
  std::vector<FabricDamage> states{FabricDamage{}};
  double max_uptime_s = 0;
  CampaignOracle recorder;
  recorder.iteration_time_s = [&](const FabricDamage& d) {
    if (!d.healthy()) states.push_back(d);
    return 1.0;
  };
  recorder.stall_s = [&](models::FabricTier tier, double down_s) { return oracle.stall_s(tier, down_s); };
  if (config.drift_step_s > 0) {
    recorder.drift_factor = [&](double uptime_s) {
      max_uptime_s = std::max(max_uptime_s, uptime_s);
      return 1.0;
    };
  }
  const bool damage = std::any_of(config.processes.begin(), config.processes.end(),
                                  [](const auto& p) { return p.effect == models::FailureEffect::kDamage; });
  const bool first_pass = damage || config.drift_step_s > 0;
  if (first_pass) check_campaign_events(config, o.seeds, 1.0);  // the recorder's iterations take 1 s
  for (std::int64_t i = 0; first_pass && i < o.seeds; ++i) run_campaign_seed(config, recorder, seed_of(s, i), false);
  oracle.simulate(states, max_uptime_s, o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

EttrStats ettr_stats(std::vector<double> per_seed) {
  EttrStats s;
  MEGASIM_ASSERT(!per_seed.empty(), "statistics need at least one seed");
  for (const double x : per_seed) s.mean += x;
  s.mean /= static_cast<double>(per_seed.size());
  std::vector<double> sorted = per_seed;
  std::sort(sorted.begin(), sorted.end());
  const auto percentile = [&](double p) {
    const double rank = p * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
  };
  s.p5 = percentile(0.05);
  s.p95 = percentile(0.95);
  s.per_seed = std::move(per_seed);
  return s;
}

models::ClusterInventory cluster_inventory(const topo::Topology& t) {
  models::ClusterInventory inv;
  inv.gpus = t.num_gpus();
  inv.hosts = t.num_servers();
  inv.nics = t.num_gpus();  // one NIC per GPU, each on its rail
  for (const topo::Link& l : t.links()) {
    if (l.direction != topo::LinkDirection::kUp) continue;
    if (l.kind == topo::LinkKind::kNic) ++inv.cables[0];
    if (l.kind == topo::LinkKind::kTorAgg) ++inv.cables[1];
    if (l.kind == topo::LinkKind::kAggCore) ++inv.cables[2];
  }
  inv.switches = {static_cast<std::int64_t>(t.nodes_of(topo::NodeKind::kTor).size()),
                  static_cast<std::int64_t>(t.nodes_of(topo::NodeKind::kAgg).size()),
                  static_cast<std::int64_t>(t.nodes_of(topo::NodeKind::kCore).size())};
  // A rail ToR serves one GPU of every server of its group.
  inv.hosts_per_tor = std::min<std::int64_t>(t.params().servers_per_group, inv.hosts);
  return inv;
}

CampaignReport run_campaign_study(const Scenario& s, const CampaignOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  check_options(o);
  validate(s);
  models::validate(s.failures);
  models::validate(s.recovery);
  models::validate(s.checkpoint);
  const auto shared_topology = std::make_shared<const topo::Topology>(topo::Topology::build(effective_cluster(s)));
  const topo::Topology& topology = *shared_topology;
  IterationOracle oracle(s, shared_topology);

  CampaignReport r;
  r.name = s.name;
  r.days = o.days;
  r.seeds = o.seeds;
  r.gpus = s.cluster.gpus;
  r.inventory = cluster_inventory(topology);
  r.checkpoint = s.checkpoint;

  CampaignConfig config;
  config.horizon_s = o.days * kSecondsPerDay;
  config.processes = models::failure_processes(s.failures, r.inventory);
  config.failures = s.failures;
  config.recovery = s.recovery;
  config.checkpoint = s.checkpoint;
  config.job_gpus = s.cluster.gpus;
  config.stall_timeout_s = sim::to_seconds(s.fabric.stall_timeout_ns);
  config.drift_step_s = s.stragglers.drifts() ? kDriftStepS : 0;
  check_campaign_events(config, o.seeds, std::numeric_limits<double>::infinity());  // the failures alone
  simulate_reached_states(config, o, s, oracle);
  const CampaignOracle callbacks = oracle.callbacks();
  r.iteration_time_s = oracle.iteration_time_s(FabricDamage{});
  r.iterations_per_checkpoint = std::max(1.0, std::round(s.checkpoint.interval_s / r.iteration_time_s));
  check_campaign_events(config, o.seeds, r.iteration_time_s);

  std::vector<double> ettr;
  const double n = static_cast<double>(o.seeds);
  for (std::int64_t i = 0; i < o.seeds; ++i) {
    SeedOutcome out = run_campaign_seed(config, callbacks, seed_of(s, i), i == 0);
    ettr.push_back(out.ettr);
    for (std::size_t c = 0; c < kLostCauseCount; ++c) r.lost_s[c] += out.lost_s[c] / n;
    for (std::size_t c = 0; c < models::kComponentCount; ++c) r.failures[c] += static_cast<double>(out.failures[c]) / n;
    r.flaps += static_cast<double>(out.flaps) / n;
    r.job_failures += static_cast<double>(out.job_failures) / n;
    if (i == 0) r.timeline = std::move(out.timeline);
  }
  r.ettr = ettr_stats(std::move(ettr));

  const double rate = job_failure_rate_per_s(config, oracle);
  r.job_mtbf_s = rate > 0 ? 1 / rate : std::numeric_limits<double>::infinity();
  const double delta = s.checkpoint.save_blocking_s;
  r.young_interval_s = rate > 0 ? models::young_interval_s(delta, r.job_mtbf_s) : r.job_mtbf_s;
  r.daly_interval_s = rate > 0 ? models::daly_interval_s(delta, r.job_mtbf_s) : r.job_mtbf_s;

  if (o.sweep) {
    for (const double interval : sweep_grid(o, r)) {
      config.checkpoint.interval_s = interval;
      check_campaign_events(config, o.seeds, r.iteration_time_s);
      std::vector<double> per_seed;
      for (std::int64_t i = 0; i < o.seeds; ++i) {
        per_seed.push_back(run_campaign_seed(config, callbacks, seed_of(s, i), false).ettr);
      }
      r.sweep.push_back({interval, ettr_stats(std::move(per_seed))});
    }
  }
  for (const auto& [damage, t] : oracle.simulated()) {
    if (!damage.healthy())
      r.damaged_iterations.push_back({damage, t, std::isinf(t) ? oracle.disconnected_hosts(damage) : 0});
  }
  if (config.drift_step_s > 0) {
    for (const auto& [knot, t] : oracle.drift_knots()) r.drift_iterations.push_back({drift_knot_uptime_s(knot), t});
  }
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace megasim::scenarios
