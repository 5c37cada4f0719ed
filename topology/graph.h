// The Boost.Graph view of a Topology: vertex i is NodeId(i), the edge property is the LinkId. Kept
// out of topology.h so that only the code that runs graph algorithms parses Boost.Graph.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>

#include "topology/topology.h"

namespace megasim::topo {

using GraphBase = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                                        boost::property<boost::edge_index_t, std::int32_t>>;

// A named type (not an alias) so that topology.h can declare it without Boost.
class Graph : public GraphBase {
 public:
  using GraphBase::GraphBase;
};

}  // namespace megasim::topo
