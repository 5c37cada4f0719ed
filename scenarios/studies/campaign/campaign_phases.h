// The campaign study (campaign_study.h) in phases that may run in different processes or on
// different machines: each a pure function of its inputs, so the report is the same to the byte
// wherever they ran. run_campaign_study runs them in one process; python/megasim/campaigns.py on
// any executor (a process pool, dask.distributed, Ray):
//  1. reach_campaign_states over ranges of seeds (tasks): the first pass, with a constant iteration
//     time, records the damaged states and the longest uptime each range of campaigns reaches;
//  2. campaign_simulations (one call): the iteration simulations those need, healthy state first;
//  3. simulate_campaign_state for each (tasks, the study's cost: one iteration simulation each);
//  4. run_campaign_seeds over ranges of seeds (tasks): the real pass with those iteration times;
//  5. merge_campaign (one call): the report from the times and the seeds' outcomes, in seed order.
// Seed i is the same campaign whichever range runs it (its streams are named by i), and the
// report's sums run over the seeds in order, so any split of the seeds into ranges gives the same
// report.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scenarios/config/scenario.h"
#include "scenarios/studies/campaign/campaign_engine.h"
#include "scenarios/studies/campaign/campaign_oracle.h"
#include "scenarios/studies/campaign/campaign_study.h"
#include "scenarios/studies/topology_cache.h"

namespace megasim::scenarios {

// What the first pass of seeds [first, first + count) reached.
struct CampaignReach {
  std::vector<FabricDamage> damaged;  // every damaged state entered, in order (repeats kept)
  double max_uptime_s = 0;            // with drift: the longest uptime asked about
};

// The real pass of seeds [first, first + count).
struct CampaignSeeds {
  std::int64_t first = 0;
  std::vector<SeedOutcome> outcomes;            // by seed, without timelines
  std::vector<std::vector<double>> sweep_ettr;  // by seed: the ETTR at each interval of the sweep
  // Simulations a seed needed that the times given lacked (a drift knot past the first pass's
  // uptimes), with their times: the merge records them, as the single process's oracle would have.
  std::vector<SimulatedIteration> extra;
};

// Each phase validates the scenario and options as run_campaign_study does (sim::ConfigError), and
// takes the scenario's topology from `topologies`. Seed ranges: 0 <= first, 1 <= count, first +
// count <= options.seeds (else sim::ConfigError naming "seeds").
CampaignReach reach_campaign_states(const Scenario& scenario, const CampaignOptions& options, std::int64_t first,
                                    std::int64_t count, TopologyCache& topologies);

// The simulations that the ranges' reaches need: the healthy state, then the capped damaged states
// in FabricDamage order, then the drift knots. Also checks, before anything is simulated, that the
// checkpoint sweep has a grid (sim::ConfigError naming --sweep-checkpoint-interval).
std::vector<CampaignSimulation> campaign_simulations(const Scenario& scenario, const CampaignOptions& options,
                                                     std::span<const CampaignReach> reaches, TopologyCache& topologies);

// One iteration simulation: its time, infinity for a partitioned fabric. sim::ConfigError for an
// impossible plan, or a simulation no campaign asks for (a knot below 0 or above 64, damage of more
// parts than kMaxSimulatedDamage or below 0).
double simulate_campaign_state(const Scenario& scenario, const CampaignSimulation& simulation,
                               TopologyCache& topologies);

// The real pass of seeds [first, first + count) with the iteration times given (those of
// campaign_simulations; one missing is simulated here and returned in `extra`).
CampaignSeeds run_campaign_seeds(const Scenario& scenario, const CampaignOptions& options,
                                 std::span<const SimulatedIteration> times, std::int64_t first, std::int64_t count,
                                 TopologyCache& topologies);

// The report: `seeds` must cover seeds 0 .. options.seeds - 1 in order, each range once (else
// sim::ConfigError naming "seeds"). Seed 0's timeline is replayed here (its campaign with the same
// times, a few milliseconds).
CampaignReport merge_campaign(const Scenario& scenario, const CampaignOptions& options,
                              std::span<const SimulatedIteration> times, std::span<const CampaignSeeds> seeds,
                              TopologyCache& topologies);

}  // namespace megasim::scenarios
