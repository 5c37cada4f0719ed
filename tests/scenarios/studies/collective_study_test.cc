#include "scenarios/studies/collective_study.h"

#include <gtest/gtest.h>

#include "scenarios/config/loader.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

Scenario small_cluster(std::int64_t gpus) {
  Scenario s;
  s.cluster.gpus = gpus;
  s.plan.tensor_model_parallel_size = 8;
  s.plan.pipeline_model_parallel_size = 1;
  return s;
}

// 64 GPUs, TP=8, PP=1: 8 DP groups, group k = GPU k of each of the 8 servers, i.e. 8 NICs on rail k
// under one ToR. The groups share no link, so each is an undisturbed flat ring and its time is the
// alpha-beta formula: base + 2(n-1) net steps + 2(n-1)/n * S / B, with B the NIC's effective rate.
TEST(CollectiveStudy, DpGroupsOfAPlanMatchTheRingFormula) {
  const Scenario s = small_cluster(64);
  CollectiveRequest r;
  r.scope = GroupScope::kData;
  r.bytes = 64.0 * 1024 * 1024;
  const CollectiveReport report = run_collective_study(s, r);
  EXPECT_EQ(report.groups, 8);
  EXPECT_EQ(report.group_size, 8);
  const double n = 8;
  const double nic_bytes_per_s = effective_cluster(s).nic_gbps * 1e9 / 8 * s.fabric.network_efficiency;
  EXPECT_DOUBLE_EQ(effective_cluster(s).nic_gbps, 200);  // the scenario names no NIC: MegaScale's
  const double expected = sim::to_seconds(s.collective.base_latency_ns) +
                          2 * (n - 1) * sim::to_seconds(s.collective.net_step_latency_ns) +
                          2 * (n - 1) / n * r.bytes / nic_bytes_per_s;
  EXPECT_NEAR(report.slowest.time_s, expected, 1e-6 * expected);
  EXPECT_NEAR(report.fastest.time_s, report.slowest.time_s, 1e-9);
  EXPECT_NEAR(report.slowest.busbw_gbytes_per_s, report.slowest.algbw_gbytes_per_s * 2 * (n - 1) / n, 1e-9);
}

// Contiguous placement keeps each of these DP groups (64 ranks, one per server, one rail) under one
// rail ToR, so its ring never meets ECMP and runs at the NIC rate. Scattered servers make the ring
// edges cross ToRs and aggregation switches, where ECMP can only add collisions: never faster.
// Topology-aware placement is already aligned here and must equal contiguous.
TEST(CollectiveStudy, PlacementPolicies) {
  Scenario s = small_cluster(1024);
  s.plan.pipeline_model_parallel_size = 2;
  CollectiveRequest r;
  r.scope = GroupScope::kData;
  r.bytes = 64.0 * 1024 * 1024;
  const double contiguous = run_collective_study(s, r).slowest.time_s;
  s.placement = topo::PlacementPolicy::kTopologyAware;
  EXPECT_DOUBLE_EQ(run_collective_study(s, r).slowest.time_s, contiguous);
  s.placement = topo::PlacementPolicy::kScattered;
  EXPECT_GE(run_collective_study(s, r).slowest.time_s, contiguous * (1 - 1e-12));
}

TEST(CollectiveStudy, SingleGroupDefaultsToTheWholeCluster) {
  CollectiveRequest r;
  r.bytes = 1 << 20;
  const CollectiveReport report = run_collective_study(small_cluster(32), r);
  EXPECT_EQ(report.groups, 1);
  EXPECT_EQ(report.group_size, 32);
  EXPECT_EQ(report.scope, "single");
  EXPECT_GT(report.flows, 0u);
}

TEST(CollectiveStudy, ImpossibleGroupsAreConfigErrors) {
  CollectiveRequest r;
  r.scope = GroupScope::kData;
  Scenario s = small_cluster(64);
  s.plan.tensor_model_parallel_size = 3;
  EXPECT_THROW(run_collective_study(s, r), sim::ConfigError);
  s.plan.tensor_model_parallel_size = 8;
  s.plan.pipeline_model_parallel_size = 3;
  EXPECT_THROW(run_collective_study(s, r), sim::ConfigError);
  CollectiveRequest too_big;
  too_big.group_gpus = 128;
  EXPECT_THROW(run_collective_study(small_cluster(64), too_big), sim::ConfigError);
  EXPECT_THROW(parse_group_scope("xp", "--group"), sim::ConfigError);
}

TEST(CollectiveStudy, JsonStartsWithTheStableKeys) {
  CollectiveRequest r;
  r.bytes = 1 << 20;
  const std::string json = to_json(run_collective_study(small_cluster(16), r), false);
  std::size_t last = 0;
  for (const char* key : {"\"op\"", "\"bytes\"", "\"gpus\"", "\"algo\"", "\"routing\"", "\"time_s\"",
                          "\"algbw_gbytes_per_s\"", "\"busbw_gbytes_per_s\""}) {
    const std::size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GT(at, last) << key << " out of order";
    last = at;
  }
  EXPECT_EQ(json.find("wall_time_s"), std::string::npos);  // non-deterministic, only on request
}

}  // namespace
}  // namespace megasim::scenarios
