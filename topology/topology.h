// The cluster as a graph (Boost.Graph, topology/graph.h): GPUs, one NVSwitch per server, rail ToRs, aggregation and
// core switches, and directed links (every cable is two links, one each way). A Topology is a pure
// function of its ClusterParams: no event loop, no mutable state, so the real backends can reuse it
// for placement. Lookups used on hot paths (a GPU's NIC link, a switch's uplinks) are O(1) tables
// next to the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sim/time.h"
#include "topology/cluster_params.h"
#include "topology/ids.h"

namespace megasim::topo {

enum class NodeKind : std::uint8_t { kGpu, kNvSwitch, kTor, kAgg, kCore };
// kNvLink: GPU <-> NVSwitch. kNic: GPU's NIC <-> its rail ToR. kTorAgg, kAggCore: switch links.
enum class LinkKind : std::uint8_t { kNvLink, kNic, kTorAgg, kAggCore };
enum class LinkDirection : std::uint8_t { kUp, kDown };  // up: away from the GPUs

std::string_view to_string(NodeKind kind);
std::string_view to_string(LinkKind kind);

struct Node {
  NodeKind kind;
  std::int32_t pod = -1;    // pod of a ToR/agg (and of a GPU/NVSwitch); -1 for cores
  std::int32_t group = -1;  // rail-ToR group of a GPU, NVSwitch or ToR; -1 above
  std::int32_t rail = -1;   // rail of a GPU or ToR
  std::int32_t plane = -1;  // plane of an agg (its index in the pod, or in its rail) or a core
  // Index among the nodes of this kind: ToR group * rails + rail, agg pod * tor_uplinks + plane (with
  // rail planes rail * tor_uplinks + plane, and the agg's rail is set), core
  // plane * agg_uplinks + j (its position in the plane).
  std::int32_t index = 0;
};

struct Link {
  NodeId from;
  NodeId to;
  LinkKind kind;
  LinkDirection direction;
  double capacity_gbps;  // nominal, each way
  sim::SimTime latency_ns;
  LinkId reverse;  // the other direction of the same cable
};

class Graph;  // topology/graph.h

class Topology {
 public:
  // Validates (ConfigError on bad parameters) and builds the graph.
  static Topology build(const ClusterParams& params);

  [[nodiscard]] const ClusterParams& params() const { return params_; }
  // The Boost.Graph view (include topology/graph.h to use it); shared by copies of this Topology.
  [[nodiscard]] const Graph& graph() const { return *graph_; }
  [[nodiscard]] int tiers() const { return tiers_; }

  [[nodiscard]] std::int64_t num_gpus() const { return params_.gpus; }
  [[nodiscard]] std::int64_t num_servers() const;
  [[nodiscard]] int num_pods() const { return num_pods_; }
  [[nodiscard]] int num_groups() const { return num_groups_; }
  [[nodiscard]] int tor_uplinks() const { return tor_uplinks_; }  // = aggregation switches per pod
  [[nodiscard]] int agg_uplinks() const { return agg_uplinks_; }  // = core switches per plane
  // ToRs of a full pod (= agg_radix/2, the aggregation down ports); the last pod may hold fewer.
  [[nodiscard]] int tors_per_pod() const { return tors_per_pod_; }
  [[nodiscard]] std::size_t num_nodes() const { return nodes_.size(); }
  [[nodiscard]] std::size_t num_links() const { return links_.size(); }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_[id.index()]; }
  [[nodiscard]] const Link& link(LinkId id) const { return links_[id.index()]; }
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  // Every node of a kind, in index order.
  [[nodiscard]] std::span<const NodeId> nodes_of(NodeKind kind) const;

  // GPU structure.
  [[nodiscard]] NodeId gpu_node(GpuId g) const { return NodeId(g.value); }
  [[nodiscard]] ServerId server_of(GpuId g) const;
  [[nodiscard]] int local_index(GpuId g) const;  // position inside its server
  [[nodiscard]] int rail_of(GpuId g) const;
  [[nodiscard]] NodeId nvswitch_of(ServerId s) const;
  [[nodiscard]] NodeId tor_of(GpuId g) const;
  [[nodiscard]] int group_of(ServerId s) const;
  [[nodiscard]] int pod_of(ServerId s) const;
  [[nodiscard]] LinkId nvlink_up(GpuId g) const;    // GPU -> NVSwitch
  [[nodiscard]] LinkId nvlink_down(GpuId g) const;  // NVSwitch -> GPU
  [[nodiscard]] LinkId nic_up(GpuId g) const;       // GPU NIC -> rail ToR
  [[nodiscard]] LinkId nic_down(GpuId g) const;     // rail ToR -> GPU NIC
  // The RoCE IPv4 address of a GPU's NIC (10.0.0.0/8, unique per GPU).
  [[nodiscard]] std::uint32_t ip_of(GpuId g) const;

  // Switch structure. up_links(sw) is the ECMP group toward the next tier in a fixed order:
  // for a ToR, link k goes to aggregation switch (plane) k of its pod; for an aggregation switch,
  // link j goes to core (plane, j). Empty for cores.
  [[nodiscard]] std::span<const LinkId> up_links(NodeId sw) const;
  // Aggregation switch `plane` of `pod` (not with rail planes, whose spines are by rail: uplink_agg).
  [[nodiscard]] NodeId agg(int pod, int plane) const;
  // The aggregation switch ToR `tor`'s uplink k reaches: agg(pod, k), or with rail planes spine k of
  // the ToR's rail.
  [[nodiscard]] NodeId uplink_agg(NodeId tor, int k) const;
  // With rail planes, the GPU of src's server that forwards a transfer to dst over its own rail when
  // the two are on different rails and servers (the one on dst's rail in src's block of `rails`
  // GPUs); src itself otherwise.
  [[nodiscard]] GpuId rail_forwarder(GpuId src, GpuId dst) const;
  // The down link agg -> tor (same pod), or core -> agg(pod, core's plane).
  [[nodiscard]] LinkId agg_down_link(NodeId agg, NodeId tor) const;
  [[nodiscard]] LinkId core_down_link(NodeId core, int pod) const;

 private:
  void add_nodes();
  void add_links();
  void add_cable(NodeId lower, NodeId upper, LinkKind kind, double gbps, sim::SimTime latency_ns);
  void build_graph();

  ClusterParams params_;
  std::shared_ptr<const Graph> graph_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  int tiers_ = 0, num_pods_ = 0, num_groups_ = 0;
  int tor_uplinks_ = 0, agg_uplinks_ = 0, tors_per_pod_ = 0;
  // Private tables owned by the implementation (topology.cc); kept opaque to users. Nodes are laid out
  // GPUs, NVSwitches, ToRs (index group * rails + rail), aggs (index pod * tor_uplinks + plane), cores
  // (index plane * agg_uplinks + j). Links: GPU g owns [4g, 4g+4) (nvlink up/down, nic up/down); then
  // one up/down pair per ToR uplink (ToR-major), then one pair per agg uplink (agg-major).
  std::vector<std::vector<NodeId>> nodes_by_kind_;
  std::vector<LinkId> up_links_flat_;  // ToR t's at [t * tor_uplinks_], then agg a's after all ToRs'
  std::int32_t groups_per_pod_ = 0;
  std::int32_t tor_base_ = 0, agg_base_ = 0, core_base_ = 0;     // first NodeId of each switch kind
  std::int32_t tor_agg_link_base_ = 0, agg_core_link_base_ = 0;  // first LinkId of each switch tier
};

}  // namespace megasim::topo
