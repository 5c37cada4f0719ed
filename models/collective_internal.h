// Private to models/: the planners behind plan_collective, one per algorithm family. Each appends
// phases to a plan whose op, algorithm, group_size and bytes are already set and validated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/collective.h"

namespace megasim::models::detail {

// The servers of a group in order of their first member, each listing its members in group order.
using ServerMembers = std::vector<std::vector<std::int32_t>>;
ServerMembers members_by_server(std::span<const std::int64_t> server_of_member);

// Whether the hierarchical ring applies (see plan_collective in collective.h).
bool use_hierarchical(CollectiveOp op, const ServerMembers& servers, const CollectiveParams& params);

void plan_flat_ring(CollectivePlan& plan, const CollectiveParams& params);
void plan_hierarchical_ring(CollectivePlan& plan, const ServerMembers& servers, const CollectiveParams& params);
void plan_double_binary_tree(CollectivePlan& plan, const ServerMembers& servers, const CollectiveParams& params);

}  // namespace megasim::models::detail
