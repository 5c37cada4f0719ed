// JSON and GraphViz (DOT) output of a Topology (what `megasim topo --json/--dot` writes).
#include <fmt/format.h>

#include <iterator>
#include <ostream>
#include <string>

#include "sim/error.h"
#include "topology/summary.h"

namespace megasim::topo {
namespace {

void write_params(const ClusterParams& p, fmt::memory_buffer& b) {
  fmt::format_to(std::back_inserter(b),
                 R"("params":{{"gpus":{},"gpus_per_server":{},"rails":{},"nic_gbps":{},"nvlink_gbytes_per_s":{},)"
                 R"("switch_radix":{},"switch_port_gbps":{},"tor_downlink_split":{},"servers_per_group":{},)"
                 R"("tor_oversubscription":{},"agg_oversubscription":{},"tiers":{},"link_latency_ns":{},)"
                 R"("nvlink_latency_ns":{}}})",
                 p.gpus, p.gpus_per_server, p.rails, p.nic_gbps, p.nvlink_gbytes_per_s, p.switch_radix,
                 p.switch_port_gbps, p.tor_downlink_split, p.servers_per_group, p.tor_oversubscription,
                 p.agg_oversubscription, p.tiers, p.link_latency_ns, p.nvlink_latency_ns);
  // Only when set, so that the files of clusters with one radix read as before.
  if (p.agg_switch_radix != 0) {
    b.resize(b.size() - 1);  // reopen the params object
    fmt::format_to(std::back_inserter(b), R"(,"agg_switch_radix":{}}})", p.agg_switch_radix);
  }
  if (p.rail_planes) {
    b.resize(b.size() - 1);
    fmt::format_to(std::back_inserter(b), R"(,"rail_planes":true}})");
  }
}

void write_summary(const TopologySummary& s, fmt::memory_buffer& b) {
  auto out = std::back_inserter(b);
  fmt::format_to(out,
                 R"("summary":{{"tiers":{},"gpus":{},"servers":{},"nvswitches":{},"tors":{},"aggs":{},"cores":{},)"
                 R"("pods":{},"groups":{},"tor_oversubscription":{},"agg_oversubscription":{},)"
                 R"("bisection_tbps":{},"bisection_ratio":{},"link_tiers":[)",
                 s.tiers, s.gpus, s.servers, s.nvswitches, s.tors, s.aggs, s.cores, s.pods, s.groups,
                 s.tor_oversubscription, s.agg_oversubscription, s.bisection_tbps, s.bisection_ratio);
  for (std::size_t i = 0; i < s.link_tiers.size(); ++i) {
    const TierSummary& t = s.link_tiers[i];
    fmt::format_to(out, R"({}{{"name":"{}","cables":{},"gbps_each_way":{},"total_tbps_up":{}}})", i ? "," : "", t.name,
                   t.cables, t.gbps_each_way, t.total_tbps_up);
  }
  fmt::format_to(out, "]}}");
}

// Flushes the buffer to the stream every so often, so a 100k-GPU graph does not sit in memory twice.
void flush_if_large(fmt::memory_buffer& b, std::ostream& out) {
  if (b.size() < (1u << 16)) return;
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
  b.clear();
}

std::string label(const Node& n) {
  switch (n.kind) {
    case NodeKind::kGpu:
      return fmt::format("gpu {} r{}", n.index, n.rail);
    case NodeKind::kNvSwitch:
      return fmt::format("nvswitch s{}", n.index);
    case NodeKind::kTor:
      return fmt::format("tor p{} g{} r{}", n.pod, n.group, n.rail);
    case NodeKind::kAgg:
      return fmt::format("agg p{} a{}", n.pod, n.plane);
    case NodeKind::kCore:
      return fmt::format("core c{} #{}", n.plane, n.index);
  }
  return "?";
}

}  // namespace

void write_json(const Topology& topo, std::ostream& out) {
  fmt::memory_buffer b;
  auto it = std::back_inserter(b);
  fmt::format_to(it, "{{");
  write_params(topo.params(), b);
  fmt::format_to(it, ",");
  write_summary(summarize(topo), b);
  fmt::format_to(it, R"(,"nodes":[)");
  for (std::size_t i = 0; i < topo.num_nodes(); ++i) {
    const Node& n = topo.nodes()[i];
    fmt::format_to(it, R"({}{{"id":{},"kind":"{}","pod":{},"group":{},"rail":{},"plane":{},"index":{}}})", i ? "," : "",
                   i, to_string(n.kind), n.pod, n.group, n.rail, n.plane, n.index);
    flush_if_large(b, out);
  }
  fmt::format_to(it, R"(],"links":[)");
  for (std::size_t i = 0; i < topo.num_links(); ++i) {
    const Link& l = topo.links()[i];
    fmt::format_to(it, R"({}{{"id":{},"from":{},"to":{},"kind":"{}","direction":"{}","gbps":{},"latency_ns":{}}})",
                   i ? "," : "", i, l.from.value, l.to.value, to_string(l.kind),
                   l.direction == LinkDirection::kUp ? "up" : "down", l.capacity_gbps, l.latency_ns);
    flush_if_large(b, out);
  }
  fmt::format_to(it, "]}}\n");
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

void write_graphviz(const Topology& topo, std::ostream& out, std::int64_t max_gpus) {
  if (topo.num_gpus() > max_gpus) {
    throw sim::ConfigError(
        "topo.graphviz", fmt::format("{} GPUs", topo.num_gpus()),
        fmt::format("a cluster of at most {} GPUs (larger drawings are unreadable; write JSON)", max_gpus));
  }
  // DOT (graphviz.org/doc/info/lang.html): a node per vertex, numbered as the topology's nodes, and
  // an edge per directed link; the labels hold only letters, digits, spaces and '#', so need no escapes.
  fmt::memory_buffer b;
  auto it = std::back_inserter(b);
  fmt::format_to(it, "digraph G {{\n");
  for (std::size_t i = 0; i < topo.num_nodes(); ++i) {
    fmt::format_to(it, "{} [label=\"{}\"];\n", i, label(topo.nodes()[i]));
    flush_if_large(b, out);
  }
  for (const Link& l : topo.links()) {
    fmt::format_to(it, "{}->{};\n", l.from.value, l.to.value);
    flush_if_large(b, out);
  }
  fmt::format_to(it, "}}\n");
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace megasim::topo
