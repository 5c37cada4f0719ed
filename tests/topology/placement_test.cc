// Placement policies: contiguous, topology-aware (MegaScale) and scattered. Expected values follow
// from the rank order rank = tp + T*(dp + D*pp) and the server/group arithmetic of ClusterParams
// (default: 8 GPUs per server, 64 servers per rail-ToR group).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "sim/error.h"
#include "topology/placement.h"

namespace megasim::topo {
namespace {

constexpr PlacementPolicy kAllPolicies[] = {PlacementPolicy::kContiguous, PlacementPolicy::kTopologyAware,
                                            PlacementPolicy::kScattered};

Topology cluster(std::int64_t gpus) {
  ClusterParams p;
  p.gpus = gpus;
  return Topology::build(p);
}

std::size_t idx(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

// The largest number of distinct rail-ToR groups any DP group's GPUs sit under, computed from the
// placement alone (independently of how the policy chose it).
int max_dp_span(const Topology& topo, const PlanShape& s, const Placement& placement) {
  int worst = 0;
  for (std::int64_t pp = 0; pp < s.pipeline; ++pp) {
    for (std::int64_t tp = 0; tp < s.tensor; ++tp) {
      std::set<int> groups;
      for (std::int64_t dp = 0; dp < s.data; ++dp) {
        groups.insert(topo.group_of(topo.server_of(placement[idx(tp + s.tensor * (dp + s.data * pp))])));
      }
      worst = std::max(worst, static_cast<int>(groups.size()));
    }
  }
  return worst;
}

// Distinct GPUs of the cluster, one per rank; each TP group in one server, rank r on local index
// r mod gpus_per_server (so TP groups sit on consecutive local GPUs and rails are preserved).
void expect_valid(const Topology& topo, const PlanShape& s, const Placement& placement) {
  ASSERT_EQ(static_cast<std::int64_t>(placement.size()), s.world());
  const int per_server = topo.params().gpus_per_server;
  std::set<std::int32_t> used;
  for (std::int64_t r = 0; r < s.world(); ++r) {
    const GpuId g = placement[idx(r)];
    ASSERT_GE(g.value, 0);
    ASSERT_LT(g.value, topo.num_gpus());
    EXPECT_TRUE(used.insert(g.value).second) << "GPU used twice: " << g.value;
    EXPECT_EQ(topo.local_index(g), static_cast<int>(r % per_server)) << "rank " << r;
    const std::int64_t tp_leader = r - r % s.tensor;
    EXPECT_EQ(topo.server_of(g), topo.server_of(placement[idx(tp_leader)])) << "rank " << r;
  }
}

TEST(Placement, PolicyNamesRoundTrip) {
  for (const PlacementPolicy p : kAllPolicies) {
    EXPECT_EQ(parse_placement_policy(to_string(p), "job.placement"), p);
  }
  EXPECT_EQ(to_string(PlacementPolicy::kTopologyAware), "topology_aware");
  try {
    (void)parse_placement_policy("random", "job.placement");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "job.placement");
    EXPECT_EQ(e.value(), "random");
  }
}

TEST(Placement, ContiguousIsRankOnSameGpu) {
  const Topology topo = cluster(1024);
  const PlanShape s{2, 16, 4};  // 128 ranks
  const Placement p = make_placement(topo, s, PlacementPolicy::kContiguous, 7);
  for (std::int64_t r = 0; r < s.world(); ++r) EXPECT_EQ(p[idx(r)].value, r);
  EXPECT_EQ(p, contiguous_placement(topo, s.world()));
}

TEST(Placement, EveryPolicyIsValidOnManyShapes) {
  // T*D a multiple of 8 (whole-server stages), not (stages share servers), and a partial server.
  const PlanShape shapes[] = {{8, 48, 2}, {8, 16, 3}, {4, 6, 5}, {2, 3, 1}, {1, 40, 4}, {8, 64, 2}};
  for (const std::int64_t gpus : {1024, 1536, 2048}) {
    const Topology topo = cluster(gpus);
    for (const PlanShape& s : shapes) {
      if (s.world() > gpus) continue;
      for (const PlacementPolicy policy : kAllPolicies) {
        SCOPED_TRACE(std::string(to_string(policy)) + " gpus=" + std::to_string(gpus));
        expect_valid(topo, s, make_placement(topo, s, policy, 11));
      }
    }
  }
}

TEST(Placement, TopologyAwareAlignsStageToGroup) {
  // 8 x 48 = 384 ranks per stage = 48 servers; a group holds 64 servers. Contiguous puts stage 1 on
  // servers 48..95, straddling groups 0 and 1; with 96 spare servers (1536 GPUs = 192 servers, job
  // 96) the aware policy starts it at the group boundary, server 64, so every DP group is in 1 group.
  const Topology topo = cluster(1536);
  const PlanShape s{8, 48, 2};
  const Placement contiguous = make_placement(topo, s, PlacementPolicy::kContiguous, 0);
  const Placement aware = make_placement(topo, s, PlacementPolicy::kTopologyAware, 0);
  expect_valid(topo, s, aware);
  EXPECT_EQ(max_dp_span(topo, s, contiguous), 2);
  EXPECT_EQ(max_dp_span(topo, s, aware), 1);
  EXPECT_EQ(aware[0].value, 0);
  EXPECT_EQ(aware[384].value, 64 * 8);  // first rank of stage 1 on the first GPU of server 64
}

TEST(Placement, TopologyAwareFallsBackWhenNoRoom) {
  const PlanShape s{8, 48, 4};  // 4 stages of 48 servers, 192 servers in all
  // Fully aligned needs servers 0..47, 64..111, 128..175, 192..239: 240 servers (1920 GPUs).
  {
    const Topology topo = cluster(2048);
    const Placement aware = make_placement(topo, s, PlacementPolicy::kTopologyAware, 0);
    EXPECT_EQ(max_dp_span(topo, s, aware), 1);
    EXPECT_EQ(aware[3 * 384].value, 192 * 8);
  }
  // 224 servers leave 32 spare: stages 1 and 2 skip 16 each, stage 3 must stay at 176..223, which
  // straddles groups 2 and 3 (as contiguous's stage 1 does).
  {
    const Topology topo = cluster(1792);
    const Placement aware = make_placement(topo, s, PlacementPolicy::kTopologyAware, 0);
    expect_valid(topo, s, aware);
    EXPECT_EQ(aware[2 * 384].value, 128 * 8);
    EXPECT_EQ(aware[3 * 384].value, 176 * 8);
    EXPECT_EQ(max_dp_span(topo, s, aware), 2);
  }
  // No spare server: the aware placement is contiguous.
  {
    const Topology topo = cluster(1536);
    EXPECT_EQ(make_placement(topo, s, PlacementPolicy::kTopologyAware, 0), contiguous_placement(topo, 1536));
  }
}

TEST(Placement, TopologyAwareNeverSpansMoreThanContiguous) {
  const PlanShape shapes[] = {{8, 48, 2}, {8, 48, 4}, {8, 24, 5}, {8, 80, 2}, {4, 40, 3},
                              {8, 16, 3}, {8, 64, 2}, {2, 12, 6}, {1, 32, 7}};
  for (const std::int64_t gpus : {768, 1024, 1536, 1792, 2048}) {
    const Topology topo = cluster(gpus);
    for (const PlanShape& s : shapes) {
      if (s.world() > gpus) continue;
      const Placement aware = make_placement(topo, s, PlacementPolicy::kTopologyAware, 0);
      const Placement contiguous = make_placement(topo, s, PlacementPolicy::kContiguous, 0);
      EXPECT_LE(max_dp_span(topo, s, aware), max_dp_span(topo, s, contiguous))
          << "gpus=" << gpus << " T=" << s.tensor << " D=" << s.data << " P=" << s.pipeline;
    }
  }
}

TEST(Placement, ScatteredIsDeterministicAndSpreads) {
  // 4096 GPUs = 512 servers in 8 groups; each 64-server stage fills exactly one group contiguously.
  // 64 servers drawn at random from 512 all landing in one group is vanishingly unlikely, and the
  // shuffle is a fixed function of the seed.
  const Topology topo = cluster(4096);
  const PlanShape s{8, 64, 2};
  EXPECT_EQ(max_dp_span(topo, s, make_placement(topo, s, PlacementPolicy::kContiguous, 0)), 1);
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const Placement a = make_placement(topo, s, PlacementPolicy::kScattered, seed);
    EXPECT_EQ(a, make_placement(topo, s, PlacementPolicy::kScattered, seed));
    expect_valid(topo, s, a);
    EXPECT_GT(max_dp_span(topo, s, a), 1);
  }
  EXPECT_NE(make_placement(topo, s, PlacementPolicy::kScattered, 1),
            make_placement(topo, s, PlacementPolicy::kScattered, 2));
}

void expect_error_key(const Topology& topo, const PlanShape& s, const std::string& key) {
  for (const PlacementPolicy policy : kAllPolicies) {
    try {
      (void)make_placement(topo, s, policy, 0);
      ADD_FAILURE() << "expected ConfigError for " << key;
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), key);
    }
  }
}

TEST(Placement, InvalidShapesThrow) {
  const Topology topo = cluster(1024);
  expect_error_key(topo, {3, 8, 1}, "plan.tensor_model_parallel_size");   // 3 does not divide 8
  expect_error_key(topo, {16, 8, 1}, "plan.tensor_model_parallel_size");  // larger than a server
  expect_error_key(topo, {0, 8, 1}, "plan.tensor_model_parallel_size");
  expect_error_key(topo, {8, 0, 1}, "plan.data_parallel_size");
  expect_error_key(topo, {8, 8, 0}, "plan.pipeline_model_parallel_size");
  expect_error_key(topo, {8, 64, 4}, "cluster.gpus");  // 2048 ranks on 1024 GPUs
}

}  // namespace
}  // namespace megasim::topo
