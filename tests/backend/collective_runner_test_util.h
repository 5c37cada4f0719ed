// Shared setup of the collective runner tests: clusters, groups and capacities derived from the
// parameters (never from the simulator's output).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/sim/collective_runner.h"
#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "topology/topology.h"

namespace megasim::backend::testing {

inline constexpr double kMiB = 1024.0 * 1024.0;

// Allowed error of a simulated time against its formula: 1e-6 relative, plus a few ns because the
// fabric rounds each flow's completion up to a whole nanosecond.
inline double tolerance(double seconds) {
  return 1e-6 * seconds + 4e-9;
}

// 8 servers of 8 GPUs under one rail-ToR group (64 servers per group by default): a two-tier Clos.
inline topo::ClusterParams one_group_cluster() {
  topo::ClusterParams c;
  c.gpus = 64;
  return c;
}

// A small three-tier 1:1 Clos: radix 8, 2 GPUs (2 rails) per server, 8 servers per group, 2 groups
// per pod, 4 pods (servers 16p .. 16p+15 in pod p); NICs 200 Gb/s, switch ports 400 Gb/s.
inline topo::ClusterParams small_clos() {
  topo::ClusterParams c;
  c.gpus = 128;
  c.gpus_per_server = 2;
  c.rails = 2;
  c.switch_radix = 8;
  c.servers_per_group = 8;
  return c;
}

// Achievable rates: nominal x efficiency, in bytes/s.
inline double nic_bytes_per_s(const topo::ClusterParams& c, const FabricParams& f) {
  return c.nic_gbps * 1e9 / 8 * f.network_efficiency;
}
inline double nvlink_bytes_per_s(const topo::ClusterParams& c, const FabricParams& f) {
  return c.nvlink_gbytes_per_s * 1e9 * f.nvlink_efficiency;
}

inline CollectiveJob make_job(const topo::Topology& topo, models::CollectiveOp op, models::CollectiveAlgorithm algo,
                              double bytes, std::vector<topo::GpuId> gpus, const models::CollectiveParams& params) {
  CollectiveJob job;
  job.members = std::move(gpus);
  job.plan = std::make_shared<const models::CollectivePlan>(
      models::plan_collective(op, algo, bytes, servers_of(topo, job.members), params));
  return job;
}

inline CollectiveResult run_one(const topo::Topology& topo, const FabricParams& fabric,
                                const models::CollectiveParams& params, const CollectiveJob& job) {
  return run_concurrently(topo, fabric, params, std::span<const CollectiveJob>(&job, 1)).front();
}

// GPU `local` of each of the given servers.
inline std::vector<topo::GpuId> gpus_of_servers(const topo::Topology& topo, const std::vector<std::int64_t>& servers,
                                                int local = 0) {
  std::vector<topo::GpuId> out;
  const std::int64_t per_server = topo.params().gpus_per_server;
  for (const std::int64_t s : servers) out.emplace_back(static_cast<std::int32_t>(s * per_server + local));
  return out;
}

inline std::vector<std::int64_t> range(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

// The 64 servers of small_clos() in an order whose every consecutive pair (and the wrap) lies in
// different pods: position i holds server (i % 4) * 16 + i / 4.
inline std::vector<std::int64_t> pod_hopping_servers() {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < 64; ++i) out.push_back((i % 4) * 16 + i / 4);
  return out;
}

}  // namespace megasim::backend::testing
