#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "sim/error.h"
#include "topology/cluster_params.h"
#include "topology/shape.h"

namespace megasim::topo {
namespace {

using sim::ConfigError;

std::string num(double v) {
  return fmt::format("{}", v);
}

void require_positive_finite(double v, const char* key) {
  if (!(v > 0) || !std::isfinite(v)) throw ConfigError(key, num(v), "a finite number > 0");
}

// The uplink count (radix/2)/oversubscription must be a whole number >= 1.
std::int64_t uplinks_for(double oversub, int half_radix) {
  const double u = static_cast<double>(half_radix) / oversub;
  const double r = std::round(u);
  return (r >= 1 && std::abs(u - r) < 1e-9) ? static_cast<std::int64_t>(r) : 0;
}

void check_oversubscription(double v, int half_radix, const char* radix_key, const char* key) {
  if (!std::isfinite(v) || v < 1 || uplinks_for(v, half_radix) == 0) {
    throw ConfigError(key, num(v),
                      fmt::format(">= 1 and such that {}/2 / oversubscription = {} / {} is a whole number of "
                                  "uplinks (e.g. 1, 2, 4)",
                                  radix_key, half_radix, num(v)));
  }
}

// NIC addresses are 10.0.0.0/8 less the network and broadcast addresses.
constexpr std::int64_t kMaxAddressableGpus = (std::int64_t{1} << 24) - 2;
// One NVLink domain: NVL72 racks have 72 GPUs, NVL576 576; far beyond is a typo.
constexpr std::int64_t kMaxGpusPerServer = 4096;

// Sizes are bounded first, so that the shape's products cannot overflow.
void check_counts(const ClusterParams& p) {
  if (p.gpus_per_server < 1 || p.gpus_per_server > kMaxGpusPerServer) {
    throw ConfigError("cluster.gpus_per_server", num(p.gpus_per_server),
                      fmt::format("an integer from 1 to {}", kMaxGpusPerServer));
  }
  if (p.gpus > kMaxAddressableGpus) {
    throw ConfigError("cluster.gpus", std::to_string(p.gpus),
                      fmt::format("at most {} GPUs (NIC addresses are 10.0.0.0/8)", kMaxAddressableGpus));
  }
  if (p.gpus < 1 || p.gpus % p.gpus_per_server != 0) {
    throw ConfigError("cluster.gpus", std::to_string(p.gpus),
                      fmt::format("a positive multiple of gpus_per_server = {}", p.gpus_per_server));
  }
  if (p.rails < 1 || p.gpus_per_server % p.rails != 0) {
    throw ConfigError("cluster.rails", std::to_string(p.rails),
                      fmt::format("an integer >= 1 dividing gpus_per_server = {}", p.gpus_per_server));
  }
}

void check_speeds(const ClusterParams& p) {
  require_positive_finite(p.nic_gbps, "cluster.nic_gbps");
  require_positive_finite(p.nvlink_gbytes_per_s, "cluster.nvlink_gbytes_per_s");
  require_positive_finite(p.switch_port_gbps, "cluster.switch_port_gbps");
  if (p.link_latency_ns < 0) throw ConfigError("cluster.link_latency_ns", std::to_string(p.link_latency_ns), ">= 0");
  if (p.nvlink_latency_ns < 0) {
    throw ConfigError("cluster.nvlink_latency_ns", std::to_string(p.nvlink_latency_ns), ">= 0");
  }
}

// The switches: radix, breakout, group size, and the ToR port share of a NIC.
void check_switches(const ClusterParams& p) {
  if (p.switch_radix < 4 || p.switch_radix > 1024 || p.switch_radix % 2 != 0) {
    throw ConfigError("cluster.switch_radix", std::to_string(p.switch_radix), "an even integer between 4 and 1024");
  }
  if (p.agg_switch_radix != 0 && (p.agg_switch_radix < 4 || p.agg_switch_radix > 1024 || p.agg_switch_radix % 2 != 0)) {
    throw ConfigError("cluster.agg_switch_radix", std::to_string(p.agg_switch_radix),
                      "0 (switch_radix) or an even integer between 4 and 1024");
  }
  const int half = p.switch_radix / 2;
  const int agg_half = agg_radix(p) / 2;
  if (!p.rail_planes && agg_half % p.rails != 0) {
    throw ConfigError("cluster.rails", std::to_string(p.rails),
                      fmt::format("a divisor of {}/2 = {} (a pod's ToRs are whole rail groups)",
                                  p.agg_switch_radix != 0 ? "agg_switch_radix" : "switch_radix", agg_half));
  }
  if (p.tor_downlink_split < 1 || p.tor_downlink_split > 64) {
    throw ConfigError("cluster.tor_downlink_split", std::to_string(p.tor_downlink_split),
                      "an integer between 1 and 64");
  }
  // A ToR serves servers_per_group * (gpus_per_server / rails) NICs on (radix/2) * split links.
  const std::int64_t per_server = p.gpus_per_server / p.rails;
  const std::int64_t max_servers = static_cast<std::int64_t>(half) * p.tor_downlink_split / per_server;
  if (p.servers_per_group < 1 || p.servers_per_group > max_servers) {
    throw ConfigError(
        "cluster.servers_per_group", std::to_string(p.servers_per_group),
        fmt::format("between 1 and (switch_radix/2 * tor_downlink_split) / (gpus_per_server/rails) = {}", max_servers));
  }
  const double port_share = p.switch_port_gbps / p.tor_downlink_split;
  if (p.nic_gbps > port_share) {
    throw ConfigError("cluster.nic_gbps", num(p.nic_gbps),
                      fmt::format("at most switch_port_gbps / tor_downlink_split = {} (the ToR port share of a NIC)",
                                  num(port_share)));
  }
}

void check_fields(const ClusterParams& p) {
  check_counts(p);
  check_speeds(p);
  check_switches(p);
  check_oversubscription(p.tor_oversubscription, p.switch_radix / 2, "switch_radix", "cluster.tor_oversubscription");
  check_oversubscription(p.agg_oversubscription, agg_radix(p) / 2,
                         p.agg_switch_radix != 0 ? "agg_switch_radix" : "switch_radix", "cluster.agg_oversubscription");
  if (p.tiers != 0 && p.tiers != 2 && p.tiers != 3) {
    throw ConfigError("cluster.tiers", std::to_string(p.tiers), "0 (automatic), 2 or 3");
  }
}

void check_structure(const ClusterParams& p, const detail::ClosShape& s) {
  if (p.rail_planes && (p.tiers == 3 || s.pods > 1)) {
    throw ConfigError("cluster.rail_planes", "true",
                      fmt::format("false, or one two-tier leaf-spine per rail: at most {}/2 = {} rail-ToR groups "
                                  "({} GPUs) and tiers 0 or 2; this cluster has {} groups, tiers {}",
                                  p.agg_switch_radix != 0 ? "agg_switch_radix" : "switch_radix", s.groups_per_pod,
                                  s.gpus_per_pod, s.groups, p.tiers));
  }
  // The IPv4 10.0.0.0/8 space gives each NIC an address 10.0.0.1 + g.
  const std::int64_t max_gpus = std::min(s.max_pods * s.gpus_per_pod, kMaxAddressableGpus);
  if (p.gpus > max_gpus) {
    throw ConfigError(
        "cluster.gpus", std::to_string(p.gpus),
        fmt::format(
            "at most {} GPUs: a three-tier Clos of core radix {} holds {} pods (a core has one port per pod) of "
            "{} ToRs = {} groups x {} servers x {} GPUs (and NIC addresses are 10.0.0.0/8)",
            max_gpus, p.switch_radix, s.max_pods, s.tors_per_pod, s.groups_per_pod, p.servers_per_group,
            p.gpus_per_server));
  }
  if (p.tiers == 2 && s.pods > 1) {
    throw ConfigError("cluster.tiers", "2",
                      fmt::format("3 or 0 (automatic): {} GPUs need {} pods, and a two-tier Clos is one pod of at most "
                                  "{} GPUs",
                                  p.gpus, s.pods, s.gpus_per_pod));
  }
  if (s.links > std::numeric_limits<std::int32_t>::max() - 1) {
    throw ConfigError("cluster.gpus", std::to_string(p.gpus),
                      fmt::format("a cluster whose graph has fewer than 2^31 links (this one has {})", s.links));
  }
}

}  // namespace

namespace detail {

ClosShape derive_shape(const ClusterParams& p) {
  ClosShape s;
  const std::int64_t half = p.switch_radix / 2;
  const std::int64_t agg_half = agg_radix(p) / 2;
  s.servers = p.gpus / p.gpus_per_server;
  s.groups = (s.servers + p.servers_per_group - 1) / p.servers_per_group;
  // A spine's down ports reach one ToR of each group of its pod; with rail planes only its rail's.
  s.tors_per_pod = p.rail_planes ? agg_half * p.rails : agg_half;
  s.groups_per_pod = p.rail_planes ? agg_half : agg_half / p.rails;
  s.pods = (s.groups + s.groups_per_pod - 1) / s.groups_per_pod;
  s.tor_uplinks = uplinks_for(p.tor_oversubscription, static_cast<int>(half));
  s.agg_uplinks = uplinks_for(p.agg_oversubscription, static_cast<int>(agg_half));
  s.gpus_per_pod = s.groups_per_pod * p.servers_per_group * p.gpus_per_server;
  s.max_pods = p.switch_radix;
  s.tiers = p.tiers != 0 ? p.tiers : (s.pods <= 1 ? 2 : 3);
  s.tors = s.groups * p.rails;
  s.aggs = s.pods * s.tor_uplinks * (p.rail_planes ? p.rails : 1);
  s.cores = s.tiers == 3 ? s.tor_uplinks * s.agg_uplinks : 0;
  s.nodes = p.gpus + s.servers + s.tors + s.aggs + s.cores;
  const std::int64_t agg_core_cables = s.tiers == 3 ? s.aggs * s.agg_uplinks : 0;
  s.links = 4 * p.gpus + 2 * s.tors * s.tor_uplinks + 2 * agg_core_cables;
  return s;
}

}  // namespace detail

void validate(const ClusterParams& params) {
  check_fields(params);
  check_structure(params, detail::derive_shape(params));
}

}  // namespace megasim::topo
