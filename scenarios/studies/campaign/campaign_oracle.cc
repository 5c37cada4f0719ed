#include "scenarios/studies/campaign/campaign_oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include "backend/sim/fabric.h"
#include "backend/sim/iteration_executor.h"
#include "scenarios/config/device.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "sim/rng.h"
#include "sim/simulator.h"

namespace megasim::scenarios {
namespace {

// Longer than any outage a campaign asks about: a probe stall this long means "no other path".
constexpr double kProbeOutageS = 1e6;

// Fisher-Yates with the given generator: a fixed order that depends only on the stream.
template <typename T>
void shuffle(std::vector<T>& items, sim::Rng& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[rng.uniform_int(i)]);
  }
}

std::vector<topo::LinkId> upward_links(const topo::Topology& t, topo::LinkKind kind) {
  std::vector<topo::LinkId> out;
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const topo::Link& l = t.link(topo::LinkId(static_cast<std::int32_t>(i)));
    if (l.kind == kind && l.direction == topo::LinkDirection::kUp) out.emplace_back(static_cast<std::int32_t>(i));
  }
  return out;
}

topo::LinkKind link_kind(models::FabricTier tier) {
  switch (tier) {
    case models::FabricTier::kNic:
      return topo::LinkKind::kNic;
    case models::FabricTier::kTorAgg:
      return topo::LinkKind::kTorAgg;
    case models::FabricTier::kAggCore:
      return topo::LinkKind::kAggCore;
  }
  return topo::LinkKind::kNic;
}

// When a transfer from GPU 0 to the last GPU ends, with or without an outage of `link` from 1 s.
double transfer_end_s(const topo::Topology& topology, backend::FabricParams params, double bytes, topo::LinkId link,
                      double down_s) {
  params.stall_timeout_ns = 0;
  params.keep_flow_records = false;
  sim::Simulator sim;
  backend::Fabric fabric(sim, topology, params);
  sim::SimTime done = -1;
  backend::FlowSpec spec;
  spec.lanes = {{topo::GpuId(0), topo::GpuId(static_cast<std::int32_t>(topology.num_gpus() - 1)), 0}};
  spec.bytes_per_lane = bytes;
  spec.on_complete = [&](backend::FlowId) { done = sim.now(); };
  fabric.start_flow(spec);
  if (link.valid()) fabric.schedule_cable_flap(link, sim::kSecond, sim::from_seconds(down_s));
  sim.run();
  return sim::to_seconds(done);
}

}  // namespace

FabricDamage capped(const FabricDamage& damage) {
  FabricDamage c = damage;
  for (std::int32_t& n : c.failed) n = std::min(n, kMaxSimulatedDamage);
  return c;
}

double probe_stall_s(const topo::Topology& topology, const backend::FabricParams& params, models::FabricTier tier,
                     double down_s) {
  if (topology.num_gpus() < 2) return 0;
  // Find the probe's cable of this tier: the link of that kind its route crosses on the way up.
  sim::Simulator sim;
  backend::Fabric fabric(sim, topology, params);
  backend::FlowSpec spec;
  spec.lanes = {{topo::GpuId(0), topo::GpuId(static_cast<std::int32_t>(topology.num_gpus() - 1)), 0}};
  spec.bytes_per_lane = 1;
  const backend::FlowId id = fabric.start_flow(spec);
  sim.run_until(0);
  topo::LinkId link;
  for (const backend::LinkUse& u : fabric.flow_usage(id)) {
    const topo::Link& l = topology.link(u.link);
    if (l.kind == link_kind(tier) && l.direction == topo::LinkDirection::kUp) link = u.link;
  }
  if (!link.valid()) return 0;
  // Long enough to outlast the outage at any rate the fabric gives a lone flow.
  const double bytes = topology.link(link).capacity_gbps * 1e9 / 8 * (down_s + 10);
  return transfer_end_s(topology, params, bytes, link, down_s) - transfer_end_s(topology, params, bytes, {}, 0);
}

static_assert(kFirstDriftKnotS * (1 << 16) < kLongestUptimeS && kFirstDriftKnotS * (1 << 17) >= kLongestUptimeS,
              "knot 17 is below the longest uptime, knot 18 reaches it");

double drift_knot_uptime_s(std::int32_t knot) {
  MEGASIM_ASSERT(knot >= 0 && knot <= kLastDriftKnot, "a drift knot past the longest campaign");
  return knot == 0 ? 0.0 : std::min(kFirstDriftKnotS * std::exp2(knot - 1), kLongestUptimeS);
}

IterationOracle::IterationOracle(const Scenario& scenario, std::shared_ptr<const topo::Topology> shared_topology)
    : scenario_(scenario), topology_(std::move(shared_topology)) {
  MEGASIM_ASSERT(topology_ != nullptr, "an iteration oracle needs its scenario's topology");
  const topo::Topology& topology = *topology_;
  scenario_.stragglers.uptime_h = 0;
  sim::Rng rng = sim::RngStreams(scenario.seed).stream("campaign.damaged_parts");
  cable_order_[0] = upward_links(topology, topo::LinkKind::kTorAgg);
  cable_order_[1] = upward_links(topology, topo::LinkKind::kAggCore);
  const auto agg = topology.nodes_of(topo::NodeKind::kAgg);
  const auto core = topology.nodes_of(topo::NodeKind::kCore);
  switch_order_[0].assign(agg.begin(), agg.end());
  switch_order_[1].assign(core.begin(), core.end());
  for (auto& order : cable_order_) shuffle(order, rng);
  for (auto& order : switch_order_) shuffle(order, rng);
  const backend::FabricParams fabric = device_model(scenario).fabric;
  for (const models::FabricTier tier :
       {models::FabricTier::kNic, models::FabricTier::kTorAgg, models::FabricTier::kAggCore}) {
    const double stall = probe_stall_s(topology, fabric, tier, kProbeOutageS);
    longest_stall_s_[static_cast<std::size_t>(tier)] =
        stall >= kProbeOutageS - 1e-3 ? std::numeric_limits<double>::infinity() : stall;
  }
}

double IterationOracle::simulate_one(const FabricDamage& capped, double uptime_s) const {
  Scenario at_uptime = scenario_;
  at_uptime.stragglers.uptime_h = uptime_s / 3600;
  RunOptions options;
  options.failed_links = failed_links(capped);
  options.straggler_whatifs = false;
  options.topology = topology_;
  try {
    return run_iteration_study(at_uptime, options).report.iteration_time_s;
  } catch (const backend::UnroutableIteration&) {
    return std::numeric_limits<double>::infinity();
  }
}

std::int64_t IterationOracle::disconnected_hosts(const FabricDamage& damage) {
  const FabricDamage c = capped(damage);
  const auto it = disconnected_.find(c);
  if (it != disconnected_.end()) return it->second;
  const std::int64_t hosts = scenarios::disconnected_hosts(*topology_, failed_links(c));
  disconnected_.emplace(c, hosts);
  return hosts;
}

std::vector<CampaignSimulation> IterationOracle::missing(const std::vector<FabricDamage>& states,
                                                         double max_uptime_s) const {
  std::set<CampaignSimulation> todo;
  for (const FabricDamage& d : states) {
    const FabricDamage c = capped(d);
    if (!iteration_s_.contains(c)) todo.insert({c, 0});
  }
  if (scenario_.stragglers.drifts()) {
    for (std::int32_t k = 1;; ++k) {
      if (!knot_s_.contains(k)) todo.insert({FabricDamage{}, k});
      if (k == kLastDriftKnot || drift_knot_uptime_s(k) >= max_uptime_s) break;
    }
  }
  // FabricDamage order first (knot 0), then the healthy knots by number.
  std::vector<CampaignSimulation> out;
  for (const CampaignSimulation& c : todo) {
    if (c.drift_knot == 0) out.push_back(c);
  }
  for (const CampaignSimulation& c : todo) {
    if (c.drift_knot != 0) out.push_back(c);
  }
  return out;
}

double IterationOracle::simulate(const CampaignSimulation& simulation) const {
  return simulate_one(capped(simulation.damage), drift_knot_uptime_s(simulation.drift_knot));
}

void IterationOracle::record(const SimulatedIteration& result) {
  const CampaignSimulation& c = result.simulation;
  if (c.drift_knot == 0) {
    iteration_s_.emplace(capped(c.damage), result.iteration_time_s);
  } else {
    knot_s_.emplace(c.drift_knot, result.iteration_time_s);
  }
}

std::vector<SimulatedIteration> IterationOracle::recorded() const {
  std::vector<SimulatedIteration> out;
  for (const auto& [damage, t] : iteration_s_) out.push_back({{damage, 0}, t});
  for (const auto& [knot, t] : knot_s_) out.push_back({{FabricDamage{}, knot}, t});
  return out;
}

double IterationOracle::iteration_time_s(const FabricDamage& damage) {
  const FabricDamage c = capped(damage);
  const auto it = iteration_s_.find(c);
  if (it != iteration_s_.end()) return it->second;
  const double t = simulate_one(c, 0);
  iteration_s_.emplace(c, t);
  return t;
}

double IterationOracle::knot_time_s(std::int32_t knot) {
  if (knot == 0) return iteration_time_s(FabricDamage{});
  const auto it = knot_s_.find(knot);
  if (it != knot_s_.end()) return it->second;
  const double t = simulate_one(FabricDamage{}, drift_knot_uptime_s(knot));
  knot_s_.emplace(knot, t);
  return t;
}

double IterationOracle::drift_factor(double uptime_s) {
  if (!scenario_.stragglers.drifts() || uptime_s <= 0) return 1;
  // The knot at or below uptime_s: 0 below the first knot, else 1 + floor(log2(uptime / first)).
  std::int32_t knot = 0;
  while (knot + 1 < kLastDriftKnot && drift_knot_uptime_s(knot + 1) <= uptime_s) ++knot;
  const double lo = drift_knot_uptime_s(knot);
  const double hi = drift_knot_uptime_s(knot + 1);
  const double t = knot_time_s(knot) + (uptime_s - lo) / (hi - lo) * (knot_time_s(knot + 1) - knot_time_s(knot));
  return t / knot_time_s(0);
}

std::map<std::int32_t, double> IterationOracle::drift_knots() {
  std::map<std::int32_t, double> out = knot_s_;
  out.emplace(0, knot_time_s(0));
  return out;
}

double IterationOracle::stall_s(models::FabricTier tier, double down_s) const {
  return std::min(down_s, longest_stall_s(tier));
}

double IterationOracle::longest_stall_s(models::FabricTier tier) const {
  return longest_stall_s_[static_cast<std::size_t>(tier)];
}

CampaignOracle IterationOracle::callbacks() {
  CampaignOracle out{[this](const FabricDamage& d) { return iteration_time_s(d); },
                     [this](models::FabricTier tier, double down_s) { return stall_s(tier, down_s); },
                     {},
                     [this](const FabricDamage& d) { return disconnected_hosts(d); }};
  if (scenario_.stragglers.drifts()) out.drift_factor = [this](double uptime_s) { return drift_factor(uptime_s); };
  return out;
}

// Both directions of the first k cables of each order, and every link of the first k switches.
std::vector<topo::LinkId> IterationOracle::failed_links(const FabricDamage& damage) const {
  std::vector<topo::LinkId> out;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(damage.failed[slot]), cable_order_[slot].size());
    for (std::size_t i = 0; i < k; ++i) {
      out.push_back(cable_order_[slot][i]);
      out.push_back(topology_->link(cable_order_[slot][i]).reverse);
    }
  }
  std::vector<topo::NodeId> switches;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(damage.failed[2 + slot]), switch_order_[slot].size());
    switches.insert(switches.end(), switch_order_[slot].begin(), switch_order_[slot].begin() + static_cast<long>(k));
  }
  if (switches.empty()) return out;
  for (std::size_t i = 0; i < topology_->num_links(); ++i) {
    const topo::Link& l = topology_->link(topo::LinkId(static_cast<std::int32_t>(i)));
    if (std::find(switches.begin(), switches.end(), l.from) != switches.end() ||
        std::find(switches.begin(), switches.end(), l.to) != switches.end()) {
      out.emplace_back(static_cast<std::int32_t>(i));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace megasim::scenarios
