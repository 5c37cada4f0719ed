#include "topology/placement.h"

#include <fmt/format.h>

#include <numeric>
#include <string>
#include <utility>

#include "sim/enum_names.h"
#include "sim/error.h"
#include "sim/rng.h"

namespace megasim::topo {
namespace {

constexpr sim::EnumNames<PlacementPolicy, 3> kPolicyNames{{
    {"contiguous", PlacementPolicy::kContiguous},
    {"topology_aware", PlacementPolicy::kTopologyAware},
    {"scattered", PlacementPolicy::kScattered},
}};

void require_job_fits(const Topology& topo, std::int64_t num_ranks) {
  if (num_ranks < 1 || num_ranks > topo.num_gpus()) {
    throw sim::ConfigError("cluster.gpus", std::to_string(topo.num_gpus()),
                           fmt::format("at least the {} GPUs the job needs (one per rank)", num_ranks));
  }
}

void validate_shape(const Topology& topo, const PlanShape& shape) {
  const int gpus_per_server = topo.params().gpus_per_server;
  if (shape.tensor < 1 || gpus_per_server % shape.tensor != 0) {
    throw sim::ConfigError("plan.tensor_model_parallel_size", std::to_string(shape.tensor),
                           fmt::format("a divisor of cluster.gpus_per_server ({})", gpus_per_server));
  }
  if (shape.data < 1) {
    throw sim::ConfigError("plan.data_parallel_size", std::to_string(shape.data), "an integer >= 1");
  }
  if (shape.pipeline < 1) {
    throw sim::ConfigError("plan.pipeline_model_parallel_size", std::to_string(shape.pipeline), "an integer >= 1");
  }
  require_job_fits(topo, shape.world());
}

// Physical server of each server block, MegaScale style (see placement.h).
std::vector<std::int64_t> aligned_servers(const Topology& topo, const PlanShape& shape, std::int64_t job_servers) {
  const std::int64_t gpus_per_server = topo.params().gpus_per_server;
  const std::int64_t per_group = topo.params().servers_per_group;
  const std::int64_t stage_servers = shape.tensor * shape.data / gpus_per_server;
  std::int64_t spare = topo.num_servers() - job_servers;
  const std::int64_t min_groups = (stage_servers + per_group - 1) / per_group;
  std::vector<std::int64_t> servers;
  servers.reserve(static_cast<std::size_t>(job_servers));
  std::int64_t cursor = 0;
  for (std::int64_t p = 0; p < shape.pipeline; ++p) {
    const std::int64_t offset = cursor % per_group;
    const std::int64_t gap = offset == 0 ? 0 : per_group - offset;
    if (offset + stage_servers > min_groups * per_group && gap <= spare) {
      cursor += gap;
      spare -= gap;
    }
    for (std::int64_t k = 0; k < stage_servers; ++k) servers.push_back(cursor + k);
    cursor += stage_servers;
  }
  return servers;
}

std::vector<std::int64_t> scattered_servers(const Topology& topo, std::uint64_t seed) {
  std::vector<std::int64_t> servers(static_cast<std::size_t>(topo.num_servers()));
  std::iota(servers.begin(), servers.end(), std::int64_t{0});
  sim::Rng rng = sim::RngStreams(seed).stream("placement.scatter");
  for (std::size_t i = servers.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.uniform_int(static_cast<std::uint64_t>(i)));
    std::swap(servers[i - 1], servers[j]);
  }
  return servers;
}

// The physical server of each server block of the job, per policy.
std::vector<std::int64_t> block_servers(const Topology& topo, const PlanShape& shape, PlacementPolicy policy,
                                        std::uint64_t seed, std::int64_t job_servers) {
  const std::int64_t gpus_per_server = topo.params().gpus_per_server;
  const bool whole_stages = (shape.tensor * shape.data) % gpus_per_server == 0;
  if (policy == PlacementPolicy::kTopologyAware && whole_stages) {
    return aligned_servers(topo, shape, job_servers);
  }
  if (policy == PlacementPolicy::kScattered) return scattered_servers(topo, seed);
  std::vector<std::int64_t> servers(static_cast<std::size_t>(job_servers));
  std::iota(servers.begin(), servers.end(), std::int64_t{0});
  return servers;
}

}  // namespace

std::string_view to_string(PlacementPolicy policy) {
  return sim::enum_name(kPolicyNames, policy);
}

PlacementPolicy parse_placement_policy(std::string_view text, std::string_view key) {
  return sim::parse_enum(kPolicyNames, text, key);
}

Placement contiguous_placement(const Topology& topo, std::int64_t num_ranks) {
  require_job_fits(topo, num_ranks);
  Placement placement;
  placement.reserve(static_cast<std::size_t>(num_ranks));
  for (std::int64_t r = 0; r < num_ranks; ++r) placement.emplace_back(static_cast<std::int32_t>(r));
  return placement;
}

Placement make_placement(const Topology& topo, const PlanShape& shape, PlacementPolicy policy, std::uint64_t seed) {
  validate_shape(topo, shape);
  const std::int64_t world = shape.world();
  const std::int64_t gpus_per_server = topo.params().gpus_per_server;
  const std::int64_t job_servers = (world + gpus_per_server - 1) / gpus_per_server;
  const std::vector<std::int64_t> servers = block_servers(topo, shape, policy, seed, job_servers);
  MEGASIM_ASSERT(static_cast<std::int64_t>(servers.size()) >= job_servers, "too few servers for the job");
  Placement placement;
  placement.reserve(static_cast<std::size_t>(world));
  for (std::int64_t r = 0; r < world; ++r) {
    const std::int64_t server = servers[static_cast<std::size_t>(r / gpus_per_server)];
    MEGASIM_ASSERT(server < topo.num_servers(), "placement past the last server");
    placement.emplace_back(static_cast<std::int32_t>(server * gpus_per_server + r % gpus_per_server));
  }
  return placement;
}

}  // namespace megasim::topo
