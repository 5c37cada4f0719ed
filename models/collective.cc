// Names, parameter checks, cost helpers and the dispatch of plan_collective. The planners
// themselves are in collective_ring.cc and collective_tree.cc.
#include "models/collective.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "models/collective_internal.h"
#include "sim/enum_names.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

constexpr sim::EnumNames<CollectiveOp, 6> kOpNames{{
    {"all_reduce", CollectiveOp::kAllReduce},
    {"reduce_scatter", CollectiveOp::kReduceScatter},
    {"all_gather", CollectiveOp::kAllGather},
    {"broadcast", CollectiveOp::kBroadcast},
    {"all_to_all", CollectiveOp::kAllToAll},
    {"send_recv", CollectiveOp::kSendRecv},
}};
constexpr sim::EnumNames<CollectiveAlgorithm, 2> kAlgoNames{{
    {"ring", CollectiveAlgorithm::kRing},
    {"tree", CollectiveAlgorithm::kTree},
}};

// Keys are named as users write them (microseconds in the scenario's [collective] section).
void check_non_negative(sim::SimTime t, const char* key) {
  if (t < 0) throw sim::ConfigError(key, fmt::format("{}", static_cast<double>(t) / 1e3), "a latency >= 0 us");
}

// Fills crosses_network of every phase from its edges.
void mark_network_phases(CollectivePlan& plan, std::span<const std::int64_t> server_of_member) {
  for (CommPhase& phase : plan.phases) {
    phase.crosses_network = false;
    for (const CommChannel& channel : phase.channels) {
      for (const CommEdge& e : channel.edges) {
        if (server_of_member[static_cast<std::size_t>(e.src)] != server_of_member[static_cast<std::size_t>(e.dst)]) {
          phase.crosses_network = true;
          break;
        }
      }
      if (phase.crosses_network) break;
    }
  }
}

// An all-to-all is n(n-1) flows; beyond this the simulation would need gigabytes.
constexpr std::size_t kMaxAllToAllMembers = 1024;

void check_request(CollectiveOp op, CollectiveAlgorithm algorithm, double bytes, std::size_t n) {
  if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw sim::ConfigError("collective.group_size", std::to_string(n), "between 1 and 2^31-1 members");
  }
  if (!(bytes > 0) || !std::isfinite(bytes)) {
    throw sim::ConfigError("collective.bytes", fmt::format("{}", bytes), "a finite size > 0 bytes");
  }
  if (algorithm == CollectiveAlgorithm::kTree && op != CollectiveOp::kAllReduce) {
    throw sim::ConfigError("collective.algo", "tree",
                           fmt::format("ring for {}; tree supports all_reduce only", to_string(op)));
  }
  if (op == CollectiveOp::kAllToAll && n > kMaxAllToAllMembers) {
    throw sim::ConfigError(
        "collective.group_size", std::to_string(n),
        fmt::format("at most {} members for all_to_all (it simulates n(n-1) flows)", kMaxAllToAllMembers));
  }
  if (op == CollectiveOp::kSendRecv && n != 2) {
    throw sim::ConfigError("collective.group_size", std::to_string(n), "exactly 2 members for send_recv");
  }
}

}  // namespace

std::string_view to_string(CollectiveOp op) {
  return sim::enum_name(kOpNames, op);
}
std::string_view to_string(CollectiveAlgorithm algo) {
  return sim::enum_name(kAlgoNames, algo);
}

CollectiveOp parse_collective_op(std::string_view text, std::string_view key) {
  return sim::parse_enum(kOpNames, text, key);
}

CollectiveAlgorithm parse_collective_algorithm(std::string_view text, std::string_view key) {
  return sim::parse_enum(kAlgoNames, text, key);
}

void validate(const CollectiveParams& params) {
  if (params.channels < 1 || params.channels > 64) {
    throw sim::ConfigError("collective.channels", std::to_string(params.channels), "an integer in [1, 64]");
  }
  check_non_negative(params.base_latency_ns, "collective.base_latency_us");
  check_non_negative(params.nvlink_step_latency_ns, "collective.nvlink_step_latency_us");
  check_non_negative(params.net_step_latency_ns, "collective.net_step_latency_us");
  if (!(params.reduction_gbytes_per_s >= 0) || !std::isfinite(params.reduction_gbytes_per_s)) {
    throw sim::ConfigError("collective.reduction_gbytes_per_s", fmt::format("{}", params.reduction_gbytes_per_s),
                           "GB/s >= 0 (0: reductions are free)");
  }
}

sim::SimTime phase_latency_ns(const CommPhase& phase, const CollectiveParams& params) {
  const sim::SimTime reduction =
      params.reduction_gbytes_per_s > 0
          ? sim::from_nanoseconds(phase.reduced_bytes / params.reduction_gbytes_per_s,  // bytes / (bytes/ns)
                                  "a collective's reduction time (check collective.reduction_gbytes_per_s)")
          : 0;
  if (!phase.crosses_network) return phase.steps * params.nvlink_step_latency_ns + reduction;
  return (phase.steps - phase.intra_server_steps) * params.net_step_latency_ns +
         phase.intra_server_steps * params.nvlink_step_latency_ns + reduction;
}

sim::SimTime CollectivePlan::latency_ns(const CollectiveParams& params) const {
  sim::SimTime total = base_latency_ns;
  for (const CommPhase& phase : phases) total += phase_latency_ns(phase, params);
  return total;
}

double bus_bandwidth_factor(CollectiveOp op, std::int64_t n) {
  MEGASIM_ASSERT(n >= 1, "bus bandwidth factor of an empty group");
  const double nd = static_cast<double>(n);
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (nd - 1.0) / nd;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll:
      return (nd - 1.0) / nd;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

CollectivePlan plan_collective(CollectiveOp op, CollectiveAlgorithm algorithm, double bytes,
                               std::span<const std::int64_t> server_of_member, const CollectiveParams& params) {
  validate(params);
  check_request(op, algorithm, bytes, server_of_member.size());
  CollectivePlan plan;
  plan.op = op;
  plan.algorithm = algorithm;
  plan.group_size = static_cast<std::int64_t>(server_of_member.size());
  plan.bytes = bytes;
  plan.base_latency_ns = params.base_latency_ns;
  if (plan.group_size == 1) return plan;

  const detail::ServerMembers servers = detail::members_by_server(server_of_member);
  if (algorithm == CollectiveAlgorithm::kTree) {
    detail::plan_double_binary_tree(plan, servers, params);
  } else if (detail::use_hierarchical(op, servers, params)) {
    detail::plan_hierarchical_ring(plan, servers, params);
  } else {
    detail::plan_flat_ring(plan, params);
  }
  mark_network_phases(plan, server_of_member);
  return plan;
}

}  // namespace megasim::models
