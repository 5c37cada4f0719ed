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
  std::string name;            // "nvlink", "nic", "tor-agg", "agg-core"
  std::int64_t cables = 0;     // bidirectional links (each is two directed links)
  double gbps_each_way = 0;    // per cable
  double total_tbps_up = 0;    // aggregate upward capacity of the tier
};

struct TopologySummary {
  int tiers = 0;
  std::int64_t gpus = 0, servers = 0, nvswitches = 0, tors = 0, aggs = 0, cores = 0;
  int pods = 0, groups = 0;
  std::vector<TierSummary> link_tiers;
  double tor_oversubscription = 0;  // measured from the built graph: down capacity / up capacity
  double agg_oversubscription = 0;
  // Bisection bandwidth, Tb/s each way: the minimum capacity of a cut that splits the GPUs into two
  // halves, computed over the built graph for the halves "first half of the servers | second half".
  double bisection_tbps = 0;
  // Bisection bandwidth divided by (GPUs/2 x NIC speed): 1.0 means full bisection.
  double bisection_ratio = 0;
};

TopologySummary summarize(const Topology& topo);

// JSON object {"params":{...},"summary":{...},"nodes":[...],"links":[...]}.
void write_json(const Topology& topo, std::ostream& out);
// GraphViz dot; refuses (ConfigError on "topo.graphviz") clusters above max_gpus GPUs, since a
// larger drawing is unreadable.
void write_graphviz(const Topology& topo, std::ostream& out, std::int64_t max_gpus = 512);

}  // namespace megasim::topo
