#include "topology/summary.h"

namespace megasim::topo {
namespace {

TierSummary tier_of(const Topology& topo, LinkKind kind) {
  TierSummary tier{std::string(to_string(kind)), 0, 0, 0};
  for (const Link& l : topo.links()) {
    if (l.kind != kind || l.direction != LinkDirection::kUp) continue;
    ++tier.cables;
    tier.gbps_each_way = l.capacity_gbps;
    tier.total_tbps_up += l.capacity_gbps;  // Gb/s until the end: integer sums stay exact
  }
  tier.total_tbps_up /= 1000;
  return tier;
}

// Sum of down capacity into `down` links / sum of up capacity of `up` links, over the whole tier.
double oversubscription(const TierSummary& below, const TierSummary& above) {
  return above.total_tbps_up > 0 ? below.total_tbps_up / above.total_tbps_up : 0.0;
}

}  // namespace

TopologySummary summarize(const Topology& topo) {
  TopologySummary s;
  s.tiers = topo.tiers();
  s.gpus = topo.num_gpus();
  s.servers = topo.num_servers();
  s.nvswitches = static_cast<std::int64_t>(topo.nodes_of(NodeKind::kNvSwitch).size());
  s.tors = static_cast<std::int64_t>(topo.nodes_of(NodeKind::kTor).size());
  s.aggs = static_cast<std::int64_t>(topo.nodes_of(NodeKind::kAgg).size());
  s.cores = static_cast<std::int64_t>(topo.nodes_of(NodeKind::kCore).size());
  s.pods = topo.num_pods();
  s.rail_planes = topo.params().rail_planes ? topo.params().rails : 0;
  s.groups = topo.num_groups();
  for (const LinkKind k : {LinkKind::kNvLink, LinkKind::kNic, LinkKind::kTorAgg, LinkKind::kAggCore}) {
    if (k == LinkKind::kAggCore && topo.tiers() != 3) continue;
    s.link_tiers.push_back(tier_of(topo, k));
  }
  // Every cable has equal capacity each way, so a tier's down capacity equals its up capacity.
  s.tor_oversubscription = oversubscription(s.link_tiers[1], s.link_tiers[2]);
  s.agg_oversubscription = topo.tiers() == 3 ? oversubscription(s.link_tiers[2], s.link_tiers[3]) : 0.0;
  const double gbps = s.gpus <= kBisectionMaxFlowMaxGpus ? bisection_gbps_max_flow(topo) : bisection_gbps_formula(topo);
  s.bisection_tbps = gbps / 1000;
  const double full = static_cast<double>(s.gpus / 2) * topo.params().nic_gbps;
  s.bisection_ratio = full > 0 ? gbps / full : 0.0;
  return s;
}

}  // namespace megasim::topo
