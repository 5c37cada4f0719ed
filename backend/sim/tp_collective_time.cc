#include "backend/sim/tp_collective_time.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "backend/sim/collective_runner.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

// Most lanes of the phase that leave one member or enter one member: every lane of a same-server
// flow crosses its source's up port and its destination's down port, so that many lanes share the
// busiest port.
std::int64_t busiest_port_lanes(const models::CommPhase& phase, std::int64_t group_size) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(group_size), 0);
  std::vector<std::int64_t> in(static_cast<std::size_t>(group_size), 0);
  for (const models::CommChannel& channel : phase.channels) {
    for (const models::CommEdge& e : channel.edges) {
      ++out[static_cast<std::size_t>(e.src)];
      ++in[static_cast<std::size_t>(e.dst)];
    }
  }
  return std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
}

}  // namespace

sim::SimTime single_server_collective_time_ns(const models::CollectivePlan& plan,
                                              const models::CollectiveParams& params, double nvlink_bytes_per_s) {
  MEGASIM_ASSERT(nvlink_bytes_per_s > 0, "NVLink rate must be > 0");
  sim::SimTime total = plan.base_latency_ns;
  for (const models::CommPhase& phase : plan.phases) {
    const double share = nvlink_bytes_per_s / static_cast<double>(busiest_port_lanes(phase, plan.group_size));
    double longest_ns = 0;
    for (const models::CommChannel& channel : phase.channels) {
      if (!channel.edges.empty()) longest_ns = std::max(longest_ns, channel.bytes_per_edge / share * 1e9);
    }
    const char* what =
        "a tensor-parallel collective's time inside a server (check cluster.nvlink_gbytes_per_s and "
        "fabric.nvlink_efficiency)";
    total = sim::add_time(sim::add_time(total, sim::ceil_from_nanoseconds(longest_ns, what), what),
                          models::phase_latency_ns(phase, params), what);
  }
  return total;
}

double nvlink_bytes_per_s(const topo::Topology& topo, const FabricParams& fabric, topo::GpuId gpu) {
  return topo.link(topo.nvlink_up(gpu)).capacity_gbps * 1e9 / 8 * fabric.nvlink_efficiency;
}

bool in_one_server(const topo::Topology& topo, std::span<const topo::GpuId> gpus) {
  return std::all_of(gpus.begin(), gpus.end(),
                     [&](topo::GpuId g) { return topo.server_of(g) == topo.server_of(gpus.front()); });
}

sim::SimTime tp_collective_time_ns(const topo::Topology& topo, const FabricParams& fabric,
                                   const models::CollectiveParams& params, std::span<const topo::GpuId> gpus,
                                   models::CollectiveOp op, double bytes) {
  if (gpus.size() < 2) return 0;
  CollectiveJob job;
  job.members.assign(gpus.begin(), gpus.end());
  job.plan = std::make_shared<const models::CollectivePlan>(
      models::plan_collective(op, models::CollectiveAlgorithm::kRing, bytes, servers_of(topo, job.members), params));
  if (in_one_server(topo, gpus)) {
    return single_server_collective_time_ns(*job.plan, params, nvlink_bytes_per_s(topo, fabric, gpus.front()));
  }
  const CollectiveResult result = run_concurrently(topo, fabric, params, std::span<const CollectiveJob>(&job, 1))[0];
  return result.end_ns - result.start_ns;
}

std::vector<TpTime> kernel_list_tp_times(const std::vector<models::KernelList>& kernels, const topo::Topology& topo,
                                         const FabricParams& fabric, const models::CollectiveParams& params,
                                         const ComputeGroupGpus& groups, PeerCollectiveTimes* peers) {
  std::vector<TpTime> out(kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    for (const models::TpCollective& c : kernels[i].tp_collectives) {
      if (c.count <= 0) continue;
      const std::vector<topo::GpuId>& gpus = groups.of(c.group);
      const std::int64_t set = groups.peer_set[static_cast<std::size_t>(c.group)];
      const double one = sim::to_seconds(peers != nullptr && set >= 0
                                             ? peers->time_ns(static_cast<std::size_t>(set), gpus, c.op, c.bytes)
                                             : tp_collective_time_ns(topo, fabric, params, gpus, c.op, c.bytes));
      double& sum = !c.overlappable                                 ? out[i].plain_s
                    : c.window == models::OverlapWindow::kAttention ? out[i].ring_attention_s
                                                                    : out[i].overlappable_s;
      sum += static_cast<double>(c.count) * one;
    }
  }
  return out;
}

}  // namespace megasim::backend
