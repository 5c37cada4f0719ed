#include "topology/topology.h"

#include "topology/graph.h"

#include "sim/error.h"
#include "topology/shape.h"

namespace megasim::topo {
namespace {

NodeId node_id(std::int64_t v) {
  return NodeId(static_cast<std::int32_t>(v));
}
LinkId link_id(std::int64_t v) {
  return LinkId(static_cast<std::int32_t>(v));
}
std::int32_t i32(std::int64_t v) {
  return static_cast<std::int32_t>(v);
}

}  // namespace

std::string_view to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::kGpu:
      return "gpu";
    case NodeKind::kNvSwitch:
      return "nvswitch";
    case NodeKind::kTor:
      return "tor";
    case NodeKind::kAgg:
      return "agg";
    case NodeKind::kCore:
      return "core";
  }
  return "?";
}

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvLink:
      return "nvlink";
    case LinkKind::kNic:
      return "nic";
    case LinkKind::kTorAgg:
      return "tor-agg";
    case LinkKind::kAggCore:
      return "agg-core";
  }
  return "?";
}

Topology Topology::build(const ClusterParams& params) {
  validate(params);
  const detail::ClosShape s = detail::derive_shape(params);
  Topology t;
  t.params_ = params;
  t.tiers_ = s.tiers;
  t.num_pods_ = i32(s.pods);
  t.num_groups_ = i32(s.groups);
  t.tor_uplinks_ = i32(s.tor_uplinks);
  t.agg_uplinks_ = i32(s.agg_uplinks);
  t.tors_per_pod_ = i32(s.tors_per_pod);
  t.groups_per_pod_ = i32(s.groups_per_pod);
  t.tor_base_ = i32(params.gpus + s.servers);
  t.agg_base_ = i32(t.tor_base_ + s.tors);
  t.core_base_ = i32(t.agg_base_ + s.aggs);
  t.nodes_.reserve(static_cast<std::size_t>(s.nodes));
  t.links_.reserve(static_cast<std::size_t>(s.links));
  t.add_nodes();
  MEGASIM_ASSERT(t.nodes_.size() == static_cast<std::size_t>(s.nodes), "node count differs from the derived shape");
  t.add_links();
  MEGASIM_ASSERT(t.links_.size() == static_cast<std::size_t>(s.links), "link count differs from the derived shape");
  t.build_graph();
  return t;
}

void Topology::add_nodes() {
  nodes_by_kind_.assign(5, {});
  auto add = [this](Node n) {
    const NodeId id = node_id(static_cast<std::int64_t>(nodes_.size()));
    nodes_by_kind_[static_cast<std::size_t>(n.kind)].push_back(id);
    nodes_.push_back(n);
  };
  const int gps = params_.gpus_per_server;
  for (std::int64_t g = 0; g < params_.gpus; ++g) {
    const ServerId s(i32(g / gps));
    add({NodeKind::kGpu, pod_of(s), group_of(s), rail_of(GpuId(i32(g))), -1, i32(g)});
  }
  for (std::int64_t s = 0; s < num_servers(); ++s) {
    add({NodeKind::kNvSwitch, pod_of(ServerId(i32(s))), group_of(ServerId(i32(s))), -1, -1, i32(s)});
  }
  const std::int64_t tors = static_cast<std::int64_t>(num_groups_) * params_.rails;
  for (std::int64_t t = 0; t < tors; ++t) {
    const auto group = i32(t / params_.rails);
    add({NodeKind::kTor, group / groups_per_pod_, group, i32(t % params_.rails), -1, i32(t)});
  }
  if (params_.rail_planes) {  // one pod; spine k of rail r is agg r * tor_uplinks + k
    for (std::int64_t a = 0; a < static_cast<std::int64_t>(params_.rails) * tor_uplinks_; ++a) {
      add({NodeKind::kAgg, 0, -1, i32(a / tor_uplinks_), i32(a % tor_uplinks_), i32(a)});
    }
  } else {
    for (std::int64_t a = 0; a < static_cast<std::int64_t>(num_pods_) * tor_uplinks_; ++a) {
      add({NodeKind::kAgg, i32(a / tor_uplinks_), -1, -1, i32(a % tor_uplinks_), i32(a)});
    }
  }
  const std::int64_t cores = tiers_ == 3 ? static_cast<std::int64_t>(tor_uplinks_) * agg_uplinks_ : 0;
  for (std::int64_t c = 0; c < cores; ++c) add({NodeKind::kCore, -1, -1, -1, i32(c / agg_uplinks_), i32(c)});
}

void Topology::add_cable(NodeId lower, NodeId upper, LinkKind kind, double gbps, sim::SimTime latency_ns) {
  const auto up = link_id(static_cast<std::int64_t>(links_.size()));
  const LinkId down(up.value + 1);
  links_.push_back({lower, upper, kind, LinkDirection::kUp, gbps, latency_ns, down});
  links_.push_back({upper, lower, kind, LinkDirection::kDown, gbps, latency_ns, up});
}

void Topology::add_links() {
  const ClusterParams& p = params_;
  const double nvlink_gbps = p.nvlink_gbytes_per_s * 8;
  for (std::int64_t g = 0; g < p.gpus; ++g) {
    const GpuId gpu(i32(g));
    add_cable(gpu_node(gpu), nvswitch_of(server_of(gpu)), LinkKind::kNvLink, nvlink_gbps, p.nvlink_latency_ns);
  }
  // The NIC cables after all NVLink cables, in GPU order: a server's NIC links, which a pipeline
  // transfer leaving or entering it crosses together, are adjacent in every per-link array (two
  // cache lines of 8-byte records rather than four with the NVLink cables in between).
  for (std::int64_t g = 0; g < p.gpus; ++g) {
    const GpuId gpu(i32(g));
    add_cable(gpu_node(gpu), tor_of(gpu), LinkKind::kNic, p.nic_gbps, p.link_latency_ns);
  }
  tor_agg_link_base_ = i32(static_cast<std::int64_t>(links_.size()));
  const auto& tors = nodes_by_kind_[static_cast<std::size_t>(NodeKind::kTor)];
  for (const NodeId tor : tors) {
    for (int k = 0; k < tor_uplinks_; ++k) {
      up_links_flat_.push_back(link_id(static_cast<std::int64_t>(links_.size())));
      add_cable(tor, uplink_agg(tor, k), LinkKind::kTorAgg, p.switch_port_gbps, p.link_latency_ns);
    }
  }
  agg_core_link_base_ = i32(static_cast<std::int64_t>(links_.size()));
  if (tiers_ != 3) return;
  for (const NodeId a : nodes_by_kind_[static_cast<std::size_t>(NodeKind::kAgg)]) {
    const int plane = node(a).plane;
    for (int j = 0; j < agg_uplinks_; ++j) {
      up_links_flat_.push_back(link_id(static_cast<std::int64_t>(links_.size())));
      add_cable(a, node_id(core_base_ + static_cast<std::int64_t>(plane) * agg_uplinks_ + j), LinkKind::kAggCore,
                p.switch_port_gbps, p.link_latency_ns);
    }
  }
}

void Topology::build_graph() {
  auto graph = std::make_shared<Graph>(nodes_.size());
  for (std::size_t i = 0; i < links_.size(); ++i) {
    boost::add_edge(links_[i].from.index(), links_[i].to.index(), static_cast<std::int32_t>(i), *graph);
  }
  graph_ = std::move(graph);
}

std::span<const NodeId> Topology::nodes_of(NodeKind kind) const {
  return nodes_by_kind_[static_cast<std::size_t>(kind)];
}

std::int64_t Topology::num_servers() const {
  return params_.gpus / params_.gpus_per_server;
}
ServerId Topology::server_of(GpuId g) const {
  return ServerId(g.value / params_.gpus_per_server);
}
int Topology::local_index(GpuId g) const {
  return g.value % params_.gpus_per_server;
}
int Topology::rail_of(GpuId g) const {
  return local_index(g) % params_.rails;
}
NodeId Topology::nvswitch_of(ServerId s) const {
  return node_id(params_.gpus + s.value);
}
int Topology::group_of(ServerId s) const {
  return s.value / params_.servers_per_group;
}
int Topology::pod_of(ServerId s) const {
  return group_of(s) / groups_per_pod_;
}

NodeId Topology::tor_of(GpuId g) const {
  return NodeId(tor_base_ + group_of(server_of(g)) * params_.rails + rail_of(g));
}

LinkId Topology::nvlink_up(GpuId g) const {
  return LinkId(2 * g.value);
}
LinkId Topology::nvlink_down(GpuId g) const {
  return LinkId(2 * g.value + 1);
}
LinkId Topology::nic_up(GpuId g) const {
  return LinkId(i32(2 * (params_.gpus + g.value)));
}
LinkId Topology::nic_down(GpuId g) const {
  return LinkId(i32(2 * (params_.gpus + g.value) + 1));
}

std::uint32_t Topology::ip_of(GpuId g) const {
  return 0x0A000001u + static_cast<std::uint32_t>(g.value);
}

std::span<const LinkId> Topology::up_links(NodeId sw) const {
  const Node& n = node(sw);
  if (n.kind == NodeKind::kTor) {
    return {up_links_flat_.data() + static_cast<std::size_t>(n.index) * static_cast<std::size_t>(tor_uplinks_),
            static_cast<std::size_t>(tor_uplinks_)};
  }
  if (n.kind == NodeKind::kAgg && tiers_ == 3) {
    const std::size_t tor_part = nodes_of(NodeKind::kTor).size() * static_cast<std::size_t>(tor_uplinks_);
    return {
        up_links_flat_.data() + tor_part + static_cast<std::size_t>(n.index) * static_cast<std::size_t>(agg_uplinks_),
        static_cast<std::size_t>(agg_uplinks_)};
  }
  return {};
}

NodeId Topology::agg(int pod, int plane) const {
  return NodeId(agg_base_ + pod * tor_uplinks_ + plane);
}

NodeId Topology::uplink_agg(NodeId tor, int k) const {
  const Node& t = node(tor);
  return params_.rail_planes ? NodeId(agg_base_ + t.rail * tor_uplinks_ + k) : agg(t.pod, k);
}

GpuId Topology::rail_forwarder(GpuId src, GpuId dst) const {
  if (!params_.rail_planes || server_of(src) == server_of(dst) || rail_of(src) == rail_of(dst)) return src;
  const std::int32_t local = src.value % params_.gpus_per_server;
  return GpuId(src.value - local + local / params_.rails * params_.rails + rail_of(dst));
}

LinkId Topology::agg_down_link(NodeId agg_node, NodeId tor) const {
  const Node& a = node(agg_node);
  const Node& t = node(tor);
  MEGASIM_ASSERT(a.kind == NodeKind::kAgg && t.kind == NodeKind::kTor && a.pod == t.pod &&
                     (!params_.rail_planes || a.rail == t.rail),
                 "agg_down_link needs an agg and a ToR of the same pod (and rail, with rail planes)");
  return LinkId(tor_agg_link_base_ + 2 * (t.index * tor_uplinks_ + a.plane) + 1);
}

LinkId Topology::core_down_link(NodeId core, int pod) const {
  const Node& c = node(core);
  MEGASIM_ASSERT(c.kind == NodeKind::kCore && pod >= 0 && pod < num_pods_, "core_down_link needs a core and a pod");
  const int a = pod * tor_uplinks_ + c.plane;
  return LinkId(agg_core_link_base_ + 2 * (a * agg_uplinks_ + c.index % agg_uplinks_) + 1);
}

}  // namespace megasim::topo
