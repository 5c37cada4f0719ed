// Internal: the derived shape of the Clos (counts per tier), computed once from validated-in-range
// ClusterParams and shared by validate() and Topology::build().
#pragma once

#include <cstdint>

#include "topology/cluster_params.h"

namespace megasim::topo::detail {

struct ClosShape {
  std::int64_t servers = 0;
  std::int64_t groups = 0;          // rail-ToR groups actually built (the last may be partial)
  std::int64_t groups_per_pod = 0;  // (radix/2) / rails
  std::int64_t tors_per_pod = 0;    // radix/2: one per aggregation down port
  std::int64_t pods = 0;            // pods actually built
  std::int64_t tor_uplinks = 0;     // (radix/2) / tor_oversubscription = aggs per pod
  std::int64_t agg_uplinks = 0;     // (radix/2) / agg_oversubscription = cores per plane
  std::int64_t gpus_per_pod = 0;    // capacity of a full pod
  std::int64_t max_pods = 0;        // a core has `radix` ports, one per pod
  int tiers = 0;                    // resolved: 2 or 3
  std::int64_t tors = 0, aggs = 0, cores = 0;
  std::int64_t nodes = 0, links = 0;  // directed links
};

// Needs the per-field checks of validate() to have passed (positive counts, integral uplinks,
// rails dividing radix/2); does not check the structural limits.
ClosShape derive_shape(const ClusterParams& p);

}  // namespace megasim::topo::detail
