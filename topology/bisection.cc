// Bisection bandwidth of the built fabric: the max flow from GPUs [0, n/2) to GPUs [n/2, n) over
// the network links (NVLink excluded, so traffic cannot cross inside a server).
//
// Closed form. Merge the aggregation switches of a pod into one node A_p and all cores into one node
// C, adding capacities: ToR <-> A_p has u_t x port, A_p <-> C has u_t x u_a x port (each way). Any
// flow of the full graph maps to a flow of this quotient (capacities add up), and any quotient flow
// splits evenly over the u_t planes and u_a cores of a plane into a feasible flow of the full graph
// (planes and the cores of a plane are interchangeable), so both max flows are equal. The quotient
// is a tree (ToRs under A_p under C) whose leaves, the ToRs, hold s_i source and t_i sink GPUs. On a
// tree, matching supply and demand as low as possible is optimal (rerouting a flow that leaves and
// re-enters a subtree through its own root uses a subset of the capacity it freed), so:
//   ToR i:  local_i = min(s_i, t_i) x nic;  sends out_i = min((s_i - t_i)+ x nic, U_t), takes in_i
//           = min((t_i - s_i)+ x nic, U_t), with U_t = u_t x port
//   pod p:  local_p = min(sum out_i, sum in_i);  sends min((sum out_i - sum in_i)+, U_a), takes
//           min((sum in_i - sum out_i)+, U_a), with U_a = u_t x u_a x port (0 with two tiers)
//   core:   min(sum sent by pods, sum taken by pods)
//   bisection = sum local_i + sum local_p + core.
// Tests check that this equals the Boost max flow on fabrics of several shapes.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include <algorithm>
#include <vector>

#include "topology/summary.h"

namespace megasim::topo {
namespace {

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, double,
                    boost::property<boost::edge_residual_capacity_t, double,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void add_arc(FlowGraph& g, std::size_t u, std::size_t v, double capacity) {
  const auto e = boost::add_edge(u, v, g).first;
  const auto r = boost::add_edge(v, u, g).first;
  boost::put(boost::edge_capacity, g, e, capacity);
  boost::put(boost::edge_capacity, g, r, 0.0);
  boost::put(boost::edge_reverse, g, e, r);
  boost::put(boost::edge_reverse, g, r, e);
}

double pos(double x) {
  return std::max(x, 0.0);
}

}  // namespace

double bisection_gbps_max_flow(const Topology& topo) {
  const std::int64_t n = topo.num_gpus();
  if (n < 2) return 0;
  const std::size_t source = topo.num_nodes();
  const std::size_t sink = source + 1;
  FlowGraph g(topo.num_nodes() + 2);
  for (const Link& l : topo.links()) {
    if (l.kind != LinkKind::kNvLink) add_arc(g, l.from.index(), l.to.index(), l.capacity_gbps);
  }
  // A GPU's only network link is its NIC, so capping the super-edges there limits nothing.
  for (std::int64_t i = 0; i < n; ++i) {
    const GpuId gpu(static_cast<std::int32_t>(i));
    const double nic = topo.link(topo.nic_up(gpu)).capacity_gbps;
    if (i < n / 2) {
      add_arc(g, source, topo.gpu_node(gpu).index(), nic);
    } else {
      add_arc(g, topo.gpu_node(gpu).index(), sink, nic);
    }
  }
  return boost::push_relabel_max_flow(g, source, sink);
}

double bisection_gbps_formula(const Topology& topo) {
  const std::int64_t n = topo.num_gpus();
  if (n < 2) return 0;
  const ClusterParams& p = topo.params();
  const auto tors = topo.nodes_of(NodeKind::kTor);
  std::vector<double> sources(tors.size(), 0.0), sinks(tors.size(), 0.0);  // s_i x nic, t_i x nic
  for (std::int64_t i = 0; i < n; ++i) {
    const GpuId gpu(static_cast<std::int32_t>(i));
    const auto t = static_cast<std::size_t>(topo.node(topo.tor_of(gpu)).index);
    (i < n / 2 ? sources[t] : sinks[t]) += topo.link(topo.nic_up(gpu)).capacity_gbps;
  }
  const double tor_up = topo.tor_uplinks() * p.switch_port_gbps;
  const double pod_up = topo.tiers() == 3 ? tor_up * topo.agg_uplinks() : 0.0;
  // With rail planes the rails' networks meet nowhere: each is a leaf-spine of its own, in the place
  // of a pod (two tiers: nothing above).
  const bool planes = p.rail_planes;
  std::vector<double> pod_out(static_cast<std::size_t>(planes ? p.rails : topo.num_pods()), 0.0);
  std::vector<double> pod_in(pod_out.size(), 0.0);
  double total = 0;
  for (std::size_t t = 0; t < tors.size(); ++t) {
    total += std::min(sources[t], sinks[t]);
    const auto pod = static_cast<std::size_t>(planes ? topo.node(tors[t]).rail : topo.node(tors[t]).pod);
    pod_out[pod] += std::min(pos(sources[t] - sinks[t]), tor_up);
    pod_in[pod] += std::min(pos(sinks[t] - sources[t]), tor_up);
  }
  double core_out = 0, core_in = 0;
  for (std::size_t pod = 0; pod < pod_out.size(); ++pod) {
    total += std::min(pod_out[pod], pod_in[pod]);
    core_out += std::min(pos(pod_out[pod] - pod_in[pod]), pod_up);
    core_in += std::min(pos(pod_in[pod] - pod_out[pod]), pod_up);
  }
  return total + std::min(core_out, core_in);
}

}  // namespace megasim::topo
