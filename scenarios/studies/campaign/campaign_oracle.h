// The campaign study's oracle (campaign_engine.h): what the iteration simulation and the fabric say
// about the cluster's current state.
//
// Iteration time of a damaged fabric: the scenario's iteration simulated with the failed parts down
// and out of their ECMP groups from the start (run_iteration_study with failed links). Which cable
// or switch fails changes the iteration only through the ECMP collisions of the flows that move, so
// each kind of part has one representative order, drawn once per scenario from the named stream
// "campaign.damaged_parts" of the scenario's seed: the k-th failed part of a kind is the k-th of that
// order, and a state is simulated once, whatever the seed of the campaign (the cache below). At most
// kMaxSimulatedDamage parts of a kind are simulated; more count as that many (such states are rare:
// failures are repaired within hours).
//
// A damaged fabric can be partitioned (a small Clos, or several parts of one plane down): some flow
// of the iteration then has no path, the simulation ends with it stalled (backend::UnroutableIteration)
// and the state's iteration time is infinite: the job cannot train in it. The hosts to evict to train
// again are those under the rail ToRs that cannot reach every other ToR, removed greedily, the ToR
// that reaches the fewest others first (disconnected_hosts below); the engine evicts them as for a
// failed ToR (campaign_engine.h).
//
// Stall of a downed cable: a probe on the fabric (backend/sim/fabric) per tier: one transfer across
// a cable of that tier, which goes down for a long time. When the fabric moves the flow to another
// path the stall is the fabric's detection delay (fabric.failure_detection_s), and a shorter outage
// stalls for its own length; when it has no other path (a NIC cable) the flow waits out the outage.
// So stall(down) = min(down, probe's stall).
//
// Drift ([stragglers] drift_per_hour): the healthy iteration simulated at uptimes 0 and
// kFirstDriftKnotS x 2^k (1 h, 2 h, 4 h, ...), as far as the campaigns reach, and interpolated
// linearly between; the drift factor is that time over the time at uptime 0. A damaged fabric's
// iteration is taken to drift by the same factor (its time at uptime 0 times the healthy fabric's
// factor): drift slows compute, damage the network, and simulating each damage at each uptime
// would multiply the simulations for a second-order effect.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "scenarios/config/scenario.h"
#include "scenarios/studies/campaign/campaign_engine.h"
#include "topology/topology.h"

namespace megasim::scenarios {

inline constexpr std::int32_t kMaxSimulatedDamage = 4;
inline constexpr double kFirstDriftKnotS = 3600;
// The longest uptime a campaign reaches: its longest horizon, 3650 days (stragglers.uptime_h's bound).
inline constexpr double kLongestUptimeS = 3650 * 86400.0;
// The last knot: the first whose doubling reaches kLongestUptimeS (2^17 h > 87,600 h).
inline constexpr std::int32_t kLastDriftKnot = 18;
// The uptime of drift knot k in 0 .. kLastDriftKnot: 0, then kFirstDriftKnotS x 2^(k-1), the last
// capped at kLongestUptimeS.
double drift_knot_uptime_s(std::int32_t knot);
// The state simulated for `damage`: at most kMaxSimulatedDamage failed parts of each kind.
FabricDamage capped(const FabricDamage& damage);

// One iteration simulation of the oracle: a damaged state (capped) at uptime 0, or, at drift knot
// k >= 1, the healthy state at that knot's uptime.
struct CampaignSimulation {
  FabricDamage damage;
  std::int32_t drift_knot = 0;
  auto operator<=>(const CampaignSimulation&) const = default;
};
struct SimulatedIteration {
  CampaignSimulation simulation;
  double iteration_time_s = 0;  // infinity when the damage partitions the fabric
};

class IterationOracle {
 public:
  // The topology must be the scenario's (Topology::build(effective_cluster(scenario))); every
  // simulation shares it. Runs the fabric probes; simulates nothing yet.
  IterationOracle(const Scenario& scenario, std::shared_ptr<const topo::Topology> topology);

  // The simulations that the states reached and, with drift, the knots up to the first at or past
  // max_uptime_s need and this oracle has not recorded: the capped states in FabricDamage order, then
  // the knots by number.
  [[nodiscard]] std::vector<CampaignSimulation> missing(const std::vector<FabricDamage>& states,
                                                        double max_uptime_s) const;
  // Runs one simulation (records nothing: a pure function of the scenario, so any process gives the
  // same time). Throws sim::ConfigError for an impossible plan.
  [[nodiscard]] double simulate(const CampaignSimulation& simulation) const;
  // Records a simulation's result (as simulate gave it, here or elsewhere); a simulation recorded
  // before keeps its first time.
  void record(const SimulatedIteration& result);
  // Every simulation recorded so far: the states in FabricDamage order, then the knots by number.
  [[nodiscard]] std::vector<SimulatedIteration> recorded() const;

  // Seconds of one iteration with this damage (simulated on first use, then cached); infinity when
  // the damage partitions the fabric.
  double iteration_time_s(const FabricDamage& damage);
  // The hosts cut off by a damage that partitions the fabric (computed on first use, then cached).
  std::int64_t disconnected_hosts(const FabricDamage& damage);
  // The drift factor after uptime_s seconds (1 without drift); knots simulated on first use.
  double drift_factor(double uptime_s);
  // Seconds a downed cable of this tier stalls the flows on it.
  [[nodiscard]] double stall_s(models::FabricTier tier, double down_s) const;
  // The stall of an outage that outlasts detection: the detection delay, or infinity without an
  // alternative path.
  [[nodiscard]] double longest_stall_s(models::FabricTier tier) const;

  // The engine's view of this oracle (refers to it: it must outlive the callbacks).
  CampaignOracle callbacks();

  // Every state simulated so far, with its iteration time (capped as above).
  [[nodiscard]] const std::map<FabricDamage, double>& simulated() const { return iteration_s_; }
  // The healthy iteration time at each drift knot simulated so far (knot 0 included), by knot.
  [[nodiscard]] std::map<std::int32_t, double> drift_knots();

 private:
  [[nodiscard]] std::vector<topo::LinkId> failed_links(const FabricDamage& damage) const;
  [[nodiscard]] double simulate_one(const FabricDamage& capped, double uptime_s) const;
  double knot_time_s(std::int32_t knot);

  Scenario scenario_;                               // the scenario at uptime 0
  std::shared_ptr<const topo::Topology> topology_;  // not null
  // Per FabricDamage slot, the representative order: cables (their upward link) or switches.
  std::array<std::vector<topo::LinkId>, 2> cable_order_;
  std::array<std::vector<topo::NodeId>, 2> switch_order_;
  std::array<double, models::kFabricTierCount> longest_stall_s_{};
  std::map<FabricDamage, double> iteration_s_;
  std::map<std::int32_t, double> knot_s_;  // knots >= 1
  std::map<FabricDamage, std::int64_t> disconnected_;
};

// The servers to evict so that the rail ToRs left reach each other with `failed` links out of their
// ECMP groups (the greedy rule at the top); 0 when every ToR reaches every other.
std::int64_t disconnected_hosts(const topo::Topology& topology, const std::vector<topo::LinkId>& failed);

// The probe above: the stall of a flow whose cable of `tier` goes down for `down_s` seconds; 0 when
// the cluster has no such cable on the probe's path (GPU 0 to the last GPU).
double probe_stall_s(const topo::Topology& topology, const backend::FabricParams& params, models::FabricTier tier,
                     double down_s);

}  // namespace megasim::scenarios
