#include "scenarios/studies/campaign/campaign_phases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "models/checkpoint_theory.h"
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

void check_seed_range(const CampaignOptions& o, std::int64_t first, std::int64_t count) {
  if (first < 0 || count < 1 || count > o.seeds - first) {
    throw sim::ConfigError(
        "seeds", fmt::format("[{}, {} + {})", first, first, count),
        fmt::format("a range of seeds within 0 .. {} (--seeds {}), at least one seed", o.seeds - 1, o.seeds));
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

// What one process of the study holds: the scenario's topology, its oracle and the engine's input.
class CampaignSetup {
 public:
  CampaignSetup(const Scenario& s, const CampaignOptions& o, TopologyCache& topologies)
      : options_(o), topology_(checked_topology(s, o, topologies)), oracle_(s, topology_) {
    inventory_ = cluster_inventory(*topology_);
    config_.horizon_s = o.days * kSecondsPerDay;
    config_.processes = models::failure_processes(s.failures, inventory_);
    config_.failures = s.failures;
    config_.recovery = s.recovery;
    config_.checkpoint = s.checkpoint;
    config_.job_gpus = s.cluster.gpus;
    config_.stall_timeout_s = sim::to_seconds(s.fabric.stall_timeout_ns);
    config_.drift_step_s = s.stragglers.drifts() ? kDriftStepS : 0;
    check_campaign_events(config_, o.seeds, std::numeric_limits<double>::infinity());  // the failures alone
    const double rate = job_failure_rate_per_s(config_, oracle_);
    job_mtbf_s_ = rate > 0 ? 1 / rate : std::numeric_limits<double>::infinity();
    const double delta = s.checkpoint.save_blocking_s;
    young_interval_s_ = rate > 0 ? models::young_interval_s(delta, job_mtbf_s_) : job_mtbf_s_;
    daly_interval_s_ = rate > 0 ? models::daly_interval_s(delta, job_mtbf_s_) : job_mtbf_s_;
  }
  CampaignSetup(const CampaignSetup&) = delete;
  CampaignSetup& operator=(const CampaignSetup&) = delete;

  [[nodiscard]] const CampaignConfig& config() const { return config_; }
  [[nodiscard]] const models::ClusterInventory& inventory() const { return inventory_; }
  IterationOracle& oracle() { return oracle_; }
  [[nodiscard]] double job_mtbf_s() const { return job_mtbf_s_; }
  [[nodiscard]] double young_interval_s() const { return young_interval_s_; }
  [[nodiscard]] double daly_interval_s() const { return daly_interval_s_; }

  // Whether any campaign can reach a damaged state or an uptime that matters (drift): else the first
  // pass has nothing to find.
  [[nodiscard]] bool needs_first_pass() const {
    const bool damage = std::any_of(config_.processes.begin(), config_.processes.end(),
                                    [](const auto& p) { return p.effect == models::FailureEffect::kDamage; });
    return damage || config_.drift_step_s > 0;
  }

  // The checkpoint sweep's intervals, sorted and distinct: the ones asked for, or a grid around
  // Daly's optimum (daly x 2^(k/2), k = -4..4) with Young's interval; empty without the sweep.
  [[nodiscard]] std::vector<double> sweep_grid() const {
    if (!options_.sweep) return {};
    std::vector<double> grid = options_.sweep_intervals_s;
    if (grid.empty()) {
      if (!std::isfinite(daly_interval_s_) || daly_interval_s_ <= 0) {
        throw sim::ConfigError(
            "--sweep-checkpoint-interval",
            fmt::format("(Daly's interval is {} s: no job failures, or no save cost)", daly_interval_s_),
            "a scenario whose failures end the job and whose saves cost time, or --intervals");
      }
      for (int k = -4; k <= 4; ++k) grid.push_back(daly_interval_s_ * std::exp2(k / 2.0));
      grid.push_back(young_interval_s_);
    }
    std::sort(grid.begin(), grid.end());
    grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
    return grid;
  }

  // Records the times given to this phase; each must be a time an iteration can take.
  void record(std::span<const SimulatedIteration> times) {
    for (const SimulatedIteration& t : times) {
      if (!(t.iteration_time_s > 0)) {
        throw sim::ConfigError("times", fmt::format("{}", t.iteration_time_s),
                               "iteration times > 0 s (infinity for a partitioned fabric), as "
                               "simulate_campaign_state gives them");
      }
      oracle_.record(t);
    }
  }

 private:
  static std::shared_ptr<const topo::Topology> checked_topology(const Scenario& s, const CampaignOptions& o,
                                                                TopologyCache& topologies) {
    check_options(o);
    validate(s);
    models::validate(s.failures);
    models::validate(s.recovery);
    models::validate(s.checkpoint);
    return topologies.get(effective_cluster(s));
  }

  const CampaignOptions& options_;
  std::shared_ptr<const topo::Topology> topology_;
  IterationOracle oracle_;
  models::ClusterInventory inventory_;
  CampaignConfig config_;
  double job_mtbf_s_ = 0;
  double young_interval_s_ = 0;
  double daly_interval_s_ = 0;
};

// The simulations the oracle recorded that `before` lacks.
std::vector<SimulatedIteration> recorded_since(const IterationOracle& oracle,
                                               const std::vector<SimulatedIteration>& before) {
  std::set<CampaignSimulation> known;
  for (const SimulatedIteration& t : before) known.insert(t.simulation);
  std::vector<SimulatedIteration> out;
  for (const SimulatedIteration& t : oracle.recorded()) {
    if (!known.contains(t.simulation)) out.push_back(t);
  }
  return out;
}

}  // namespace

CampaignReach reach_campaign_states(const Scenario& s, const CampaignOptions& o, std::int64_t first, std::int64_t count,
                                    TopologyCache& topologies) {
  CampaignSetup setup(s, o, topologies);
  check_seed_range(o, first, count);
  CampaignReach reach;
  if (!setup.needs_first_pass()) return reach;
  CampaignOracle recorder;
  recorder.iteration_time_s = [&](const FabricDamage& d) {
    if (!d.healthy()) reach.damaged.push_back(d);
    return 1.0;
  };
  recorder.stall_s = [&](models::FabricTier tier, double down_s) { return setup.oracle().stall_s(tier, down_s); };
  if (setup.config().drift_step_s > 0) {
    recorder.drift_factor = [&](double uptime_s) {
      reach.max_uptime_s = std::max(reach.max_uptime_s, uptime_s);
      return 1.0;
    };
  }
  check_campaign_events(setup.config(), o.seeds, 1.0);  // the recorder's iterations take 1 s
  for (std::int64_t i = first; i < first + count; ++i)
    run_campaign_seed(setup.config(), recorder, seed_of(s, i), false);
  return reach;
}

std::vector<CampaignSimulation> campaign_simulations(const Scenario& s, const CampaignOptions& o,
                                                     std::span<const CampaignReach> reaches,
                                                     TopologyCache& topologies) {
  CampaignSetup setup(s, o, topologies);
  (void)setup.sweep_grid();  // a sweep without a grid fails before anything is simulated
  std::vector<FabricDamage> states{FabricDamage{}};
  double max_uptime_s = 0;
  for (const CampaignReach& r : reaches) {
    states.insert(states.end(), r.damaged.begin(), r.damaged.end());
    max_uptime_s = std::max(max_uptime_s, r.max_uptime_s);
  }
  return setup.oracle().missing(states, max_uptime_s);
}

double simulate_campaign_state(const Scenario& s, const CampaignSimulation& simulation, TopologyCache& topologies) {
  validate(s);
  for (const std::int32_t n : simulation.damage.failed) {
    if (n < 0 || n > kMaxSimulatedDamage) {
      throw sim::ConfigError(
          "simulation.failed", std::to_string(n),
          fmt::format("0 to {} failed parts of a kind (more are simulated as that many)", kMaxSimulatedDamage));
    }
  }
  const std::int32_t knot = simulation.drift_knot;
  if (knot < 0 || knot > kLastDriftKnot || (knot > 0 && !s.stragglers.drifts()) ||
      (knot > 0 && !simulation.damage.healthy())) {
    throw sim::ConfigError("simulation.drift_knot", std::to_string(knot),
                           fmt::format("0, or with stragglers.drift_per_hour > 0 and no damage 1 to {} (knot k is "
                                       "the healthy iteration after {} s x 2^(k - 1) of uptime)",
                                       kLastDriftKnot, kFirstDriftKnotS));
  }
  const IterationOracle oracle(s, topologies.get(effective_cluster(s)));
  return oracle.simulate(simulation);
}

CampaignSeeds run_campaign_seeds(const Scenario& s, const CampaignOptions& o, std::span<const SimulatedIteration> times,
                                 std::int64_t first, std::int64_t count, TopologyCache& topologies) {
  CampaignSetup setup(s, o, topologies);
  check_seed_range(o, first, count);
  setup.record(times);
  const std::vector<SimulatedIteration> given = setup.oracle().recorded();
  check_campaign_events(setup.config(), o.seeds, setup.oracle().iteration_time_s(FabricDamage{}));
  const std::vector<double> grid = setup.sweep_grid();
  std::vector<CampaignConfig> at_interval(grid.size(), setup.config());
  for (std::size_t k = 0; k < grid.size(); ++k) {
    at_interval[k].checkpoint.interval_s = grid[k];
    check_campaign_events(at_interval[k], o.seeds, setup.oracle().iteration_time_s(FabricDamage{}));
  }
  const CampaignOracle callbacks = setup.oracle().callbacks();
  CampaignSeeds out;
  out.first = first;
  for (std::int64_t i = first; i < first + count; ++i) {
    out.outcomes.push_back(run_campaign_seed(setup.config(), callbacks, seed_of(s, i), false));
    std::vector<double>& ettr = out.sweep_ettr.emplace_back();
    for (const CampaignConfig& c : at_interval)
      ettr.push_back(run_campaign_seed(c, callbacks, seed_of(s, i), false).ettr);
  }
  out.extra = recorded_since(setup.oracle(), given);
  return out;
}

CampaignReport merge_campaign(const Scenario& s, const CampaignOptions& o, std::span<const SimulatedIteration> times,
                              std::span<const CampaignSeeds> seeds, TopologyCache& topologies) {
  CampaignSetup setup(s, o, topologies);
  const std::vector<double> grid = setup.sweep_grid();
  setup.record(times);
  std::int64_t next = 0;
  for (const CampaignSeeds& range : seeds) {
    const bool rows_match = std::all_of(range.sweep_ettr.begin(), range.sweep_ettr.end(),
                                        [&](const auto& row) { return row.size() == grid.size(); });
    if (range.first != next || range.outcomes.empty() || range.sweep_ettr.size() != range.outcomes.size() ||
        !rows_match) {
      throw sim::ConfigError("seeds",
                             fmt::format("a range from seed {} of {} seeds", range.first, range.outcomes.size()),
                             fmt::format("ranges covering seeds 0 .. {} in order, each seed once with an ETTR per "
                                         "sweep interval ({}): the next range starts at seed {}",
                                         o.seeds - 1, grid.size(), next));
    }
    next += static_cast<std::int64_t>(range.outcomes.size());
    setup.record(range.extra);
  }
  if (next != o.seeds) {
    throw sim::ConfigError("seeds", fmt::format("{} seeds", next),
                           fmt::format("ranges covering all {} seeds (--seeds)", o.seeds));
  }

  CampaignReport r;
  r.name = s.name;
  r.days = o.days;
  r.seeds = o.seeds;
  r.gpus = s.cluster.gpus;
  r.inventory = setup.inventory();
  r.checkpoint = s.checkpoint;
  r.iteration_time_s = setup.oracle().iteration_time_s(FabricDamage{});
  r.iterations_per_checkpoint = std::max(1.0, std::round(s.checkpoint.interval_s / r.iteration_time_s));
  check_campaign_events(setup.config(), o.seeds, r.iteration_time_s);

  std::vector<double> ettr;
  std::vector<std::vector<double>> sweep_ettr(grid.size());
  const double n = static_cast<double>(o.seeds);
  for (const CampaignSeeds& range : seeds) {
    for (std::size_t j = 0; j < range.outcomes.size(); ++j) {
      const SeedOutcome& out = range.outcomes[j];
      ettr.push_back(out.ettr);
      for (std::size_t c = 0; c < kLostCauseCount; ++c) r.lost_s[c] += out.lost_s[c] / n;
      for (std::size_t c = 0; c < models::kComponentCount; ++c) {
        r.failures[c] += static_cast<double>(out.failures[c]) / n;
      }
      r.flaps += static_cast<double>(out.flaps) / n;
      r.job_failures += static_cast<double>(out.job_failures) / n;
      for (std::size_t k = 0; k < grid.size(); ++k) sweep_ettr[k].push_back(range.sweep_ettr[j][k]);
    }
  }
  r.ettr = ettr_stats(std::move(ettr));
  const CampaignOracle callbacks = setup.oracle().callbacks();
  r.timeline = run_campaign_seed(setup.config(), callbacks, seed_of(s, 0), true).timeline;

  r.job_mtbf_s = setup.job_mtbf_s();
  r.young_interval_s = setup.young_interval_s();
  r.daly_interval_s = setup.daly_interval_s();
  for (std::size_t k = 0; k < grid.size(); ++k) r.sweep.push_back({grid[k], ettr_stats(std::move(sweep_ettr[k]))});
  for (const auto& [damage, t] : setup.oracle().simulated()) {
    if (!damage.healthy()) {
      r.damaged_iterations.push_back({damage, t, std::isinf(t) ? setup.oracle().disconnected_hosts(damage) : 0});
    }
  }
  if (setup.config().drift_step_s > 0) {
    for (const auto& [knot, t] : setup.oracle().drift_knots()) {
      r.drift_iterations.push_back({drift_knot_uptime_s(knot), t});
    }
  }
  return r;
}

}  // namespace megasim::scenarios
