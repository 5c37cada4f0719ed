// The topologies a study's runs share (scenarios/studies/topology_cache.h): one build per cluster
// while it is kept, and a run handed the shared topology reports exactly what a run that builds its
// own does.
#include "scenarios/studies/topology_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

topo::ClusterParams cluster_of(std::int64_t gpus) {
  topo::ClusterParams p;
  p.gpus = gpus;
  return p;
}

TEST(TopologyCache, EqualClustersShareOneBuild) {
  TopologyCache cache;
  const std::shared_ptr<const topo::Topology> a = cache.get(cluster_of(64));
  EXPECT_EQ(cache.get(cluster_of(64)), a);
  EXPECT_EQ(a->params(), cluster_of(64));
  const std::shared_ptr<const topo::Topology> b = cache.get(cluster_of(128));
  EXPECT_NE(b, a);
  EXPECT_EQ(b->num_gpus(), 128);
  topo::ClusterParams slower = cluster_of(64);
  slower.nic_gbps = 100;
  EXPECT_NE(cache.get(slower), a);  // any parameter tells clusters apart, not just the size
}

// After kKept other clusters the first is no longer kept: asked again, it is built again (equal, but
// a new object), while a caller still holding the old one keeps it valid.
TEST(TopologyCache, KeepsTheLastClustersOnly) {
  TopologyCache cache;
  const std::shared_ptr<const topo::Topology> first = cache.get(cluster_of(8));
  for (std::size_t i = 1; i < TopologyCache::kKept; ++i) cache.get(cluster_of(8 * static_cast<std::int64_t>(i + 1)));
  EXPECT_EQ(cache.get(cluster_of(8)), first);  // kKept distinct clusters: all still kept
  cache.get(cluster_of(8 * static_cast<std::int64_t>(TopologyCache::kKept + 1)));
  const std::shared_ptr<const topo::Topology> again = cache.get(cluster_of(8));
  EXPECT_NE(again, first);
  EXPECT_EQ(again->params(), first->params());
  EXPECT_EQ(again->num_links(), first->num_links());
  EXPECT_EQ(first->num_gpus(), 8);
}

TEST(TopologyCache, BadParametersThrowLikeABuild) {
  TopologyCache cache;
  topo::ClusterParams odd = cluster_of(12);  // not a multiple of the 8 GPUs of a server
  EXPECT_THROW(cache.get(odd), sim::ConfigError);
}

Scenario two_servers() {
  return load_scenario_text(R"([cluster]
gpu = "A100"
gpus = 16
[model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
[plan]
tensor_model_parallel_size = 8
pipeline_model_parallel_size = 2
global_batch_size = 8
)");
}

TEST(TopologyCache, RunsOnASharedTopologyReportTheSame) {
  const Scenario s = two_servers();
  TopologyCache cache;
  RunOptions shared;
  shared.topology = cache.get(effective_cluster(s));
  const RunResult own = run_iteration_study(s);
  const RunResult with_shared = run_iteration_study(s, shared);
  ASSERT_GT(own.report.iteration_time_s, 0);
  EXPECT_EQ(with_shared.report.iteration_time_s, own.report.iteration_time_s);
  EXPECT_EQ(with_shared.report.mean.pp_exposed_s, own.report.mean.pp_exposed_s);
  EXPECT_EQ(with_shared.report.mean.dp_exposed_s, own.report.mean.dp_exposed_s);
  EXPECT_EQ(screen_iteration_study(s, shared.topology).report.tokens_per_s,
            screen_iteration_study(s).report.tokens_per_s);
}

TEST(TopologyCacheDeathTest, ARunHandedAnotherClustersTopologyStops) {
  const Scenario s = two_servers();
  RunOptions wrong;
  wrong.topology = std::make_shared<const topo::Topology>(topo::Topology::build(cluster_of(32)));
  EXPECT_DEATH(run_iteration_study(s, wrong), "topology of another cluster");
}

}  // namespace
}  // namespace megasim::scenarios
