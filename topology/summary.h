// What `megasim topo` prints: counts per tier, bandwidth per tier, oversubscription and bisection
// bandwidth; and the graph written as JSON or GraphViz.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace megasim::topo {

struct TierSummary {
  std::string name;          // "nvlink", "nic", "tor-agg", "agg-core"
  std::int64_t cables = 0;   // bidirectional links (each is two directed links)
  double gbps_each_way = 0;  // per cable
  double total_tbps_up = 0;  // aggregate upward capacity of the tier
};

struct TopologySummary {
  int tiers = 0;
  std::int64_t gpus = 0, servers = 0, nvswitches = 0, tors = 0, aggs = 0, cores = 0;
  int pods = 0, groups = 0;
  int rail_planes = 0;  // the rails with a leaf-spine each (ClusterParams::rail_planes), else 0
  std::vector<TierSummary> link_tiers;
  // Measured from the built graph, summed over all switches of the tier: down capacity (NIC links
  // for ToRs, ToR-agg links for aggs) / up capacity. 0 for aggs of a two-tier fabric (no uplinks).
  double tor_oversubscription = 0;
  double agg_oversubscription = 0;
  // Bisection bandwidth, Tb/s each way: the minimum capacity of a cut that splits the GPUs into two
  // halves, computed over the built graph for the halves "first half of the servers | second half"
  // (GPUs [0, n/2) | [n/2, n), which splits a server only when the server count is odd). It is the
  // max flow from the first half to the second over the network links (NVLink excluded).
  double bisection_tbps = 0;
  // Bisection bandwidth divided by (floor(GPUs/2) x NIC speed): 1.0 means full bisection; 0 for one GPU.
  double bisection_ratio = 0;
};

TopologySummary summarize(const Topology& topo);

// The bisection max flow in Gb/s, two independent ways. summarize() uses the max flow up to
// kBisectionMaxFlowMaxGpus GPUs and the formula above; tests check that the two agree.
inline constexpr std::int64_t kBisectionMaxFlowMaxGpus = 16384;
// Boost.Graph push-relabel max flow over every network link of the built graph.
double bisection_gbps_max_flow(const Topology& topo);
// Closed form on the quotient tree, exact by symmetry (see bisection.cc): O(GPUs + ToRs).
double bisection_gbps_formula(const Topology& topo);

// JSON object {"params":{...},"summary":{...},"nodes":[...],"links":[...]}.
void write_json(const Topology& topo, std::ostream& out);
// GraphViz dot; refuses (ConfigError on "topo.graphviz") clusters above max_gpus GPUs, since a
// larger drawing is unreadable.
void write_graphviz(const Topology& topo, std::ostream& out, std::int64_t max_gpus = 512);

}  // namespace megasim::topo
