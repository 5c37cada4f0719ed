#include "scenarios/studies/campaign/campaign_study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "scenarios/studies/campaign/campaign_phases.h"
#include "scenarios/studies/thread_pool.h"
#include "sim/error.h"

namespace megasim::scenarios {

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
  TopologyCache topologies;
  const CampaignReach reach = reach_campaign_states(s, o, 0, o.seeds, topologies);
  const std::vector<CampaignSimulation> simulations = campaign_simulations(s, o, {&reach, 1}, topologies);
  // The simulations are independent: `threads` at a time. An error (an impossible plan) is rethrown
  // after all finished, the first simulation's in order.
  std::vector<SimulatedIteration> times(simulations.size());
  for_each_index(simulations.size(), o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency()),
                 [&](std::size_t i) {
                   times[i] = {simulations[i], simulate_campaign_state(s, simulations[i], topologies)};
                 });
  const CampaignSeeds seeds = run_campaign_seeds(s, o, times, 0, o.seeds, topologies);
  CampaignReport r = merge_campaign(s, o, times, {&seeds, 1}, topologies);
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace megasim::scenarios
