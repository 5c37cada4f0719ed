// `megasim campaign`: a whole training run of the scenario's job over days of wall time, with the
// cluster's failures and the recovery from them (campaign_engine.h), repeated over seeds.
//
// The study builds the cluster's inventory from its topology (GPUs, hosts, NICs, network cables and
// switches per tier; models/reliability.h turns it into failure processes), simulates the healthy
// iteration and every damaged state the campaigns reach (campaign_oracle.h, one simulation per
// state, shared by all seeds and sweep points; with drift, also the iteration at a few uptimes), and runs the engine
// once per seed. Which states a campaign reaches depends only on its failure and repair times, not on what the job is
// doing, so a first pass of the engine with a constant iteration time finds them all; they are then simulated in
// parallel before the real pass. Seed i draws from the streams of
// RngStreams(scenario.seed).stream_seed("campaign.seed.<i>"), so the same scenario, days and seed count give
// bit-identical results.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/reliability.h"
#include "scenarios/config/scenario.h"
#include "scenarios/studies/campaign/campaign_engine.h"
#include "topology/topology.h"

namespace megasim::scenarios {

struct CampaignOptions {
  double days = 30;
  std::int64_t seeds = 10;
  // Also run every seed at each of these checkpoint intervals; with sweep and no intervals, a grid
  // around Daly's optimum (daly x 2^(k/2), k = -4..4) and Young's and Daly's intervals themselves.
  bool sweep = false;
  std::vector<double> sweep_intervals_s;
  // Iteration simulations run at once (they are independent); 0: one per hardware thread. The
  // results do not depend on it.
  unsigned threads = 0;
};

// Over seeds: the mean and the 5th and 95th percentiles (linear interpolation between order
// statistics, rank p x (n - 1), as numpy's default).
struct EttrStats {
  double mean = 0;
  double p5 = 0;
  double p95 = 0;
  std::vector<double> per_seed;
};
EttrStats ettr_stats(std::vector<double> per_seed);

struct SweepPoint {
  double interval_s = 0;
  EttrStats ettr;
};

struct DamagedIteration {
  FabricDamage damage;
  double iteration_time_s = 0;          // infinity when the damage partitions the fabric
  std::int64_t disconnected_hosts = 0;  // then: the hosts it cuts off (campaign_oracle.h)
};

// The healthy iteration after this long since the processes started (drift, campaign_oracle.h).
struct DriftIteration {
  double uptime_s = 0;
  double iteration_time_s = 0;
};

struct CampaignReport {
  std::string name;  // simulation.name
  double days = 0;
  std::int64_t seeds = 0;
  std::int64_t gpus = 0;
  models::ClusterInventory inventory;
  double iteration_time_s = 0;  // healthy
  double iterations_per_checkpoint = 0;
  models::CheckpointParams checkpoint;
  EttrStats ettr;
  std::array<double, kLostCauseCount> lost_s{};            // mean per seed
  std::array<double, models::kComponentCount> failures{};  // mean per seed
  double flaps = 0;                                        // mean per seed
  double job_failures = 0;                                 // mean per seed
  // Mean time between job failures from the rates (fatal processes, plus flaps and damage whose
  // stall outlasts the NCCL timeout), and the intervals it gives with save_blocking_s as delta.
  double job_mtbf_s = 0;
  double young_interval_s = 0;
  double daly_interval_s = 0;
  std::vector<TimelineEvent> timeline;               // seed 0
  std::vector<SweepPoint> sweep;                     // by interval, when asked for
  std::vector<DamagedIteration> damaged_iterations;  // every damaged state simulated
  std::vector<DriftIteration> drift_iterations;      // with drift: every knot simulated, by uptime
  double wall_time_s = 0;                            // host time (not deterministic; not in the JSON)
};

// Throws sim::ConfigError for a bad scenario, plan, failure, recovery or checkpoint key, or bad
// options ("--days": a second (1/86400) up to 3650; "--seeds": 1 to 100000; "--intervals": > 0, each once).
CampaignReport run_campaign_study(const Scenario& scenario, const CampaignOptions& options);

// A campaign's work grows with its failure rates and checkpoints: the engine handles every failure,
// flap and save as events (seed 0 keeps them all in its timeline). Throws sim::ConfigError naming
// failures.rate_scale (or checkpoint.interval_s when saves dominate), with the expected counts,
// when a seed expects more than kMaxCampaignEventsPerSeed of them, or a pass over all seeds more
// than kMaxCampaignEvents, with `iteration_s` the iteration time the pass trains at. A month
// of MegaScale's 175B job at the public rates expects about 400 failures and 2,900 saves a seed.
inline constexpr double kMaxCampaignEventsPerSeed = 1e6;
inline constexpr double kMaxCampaignEvents = 2e8;
void check_campaign_events(const CampaignConfig& config, std::int64_t seeds, double iteration_s);

// The job's component instances: every GPU, host, NIC, network cable and switch of the topology.
models::ClusterInventory cluster_inventory(const topo::Topology& topology);

}  // namespace megasim::scenarios
