// Host grouping for the real backends' link measurements (backend/host_groups.h): which ranks share
// a host, the intra- and inter-node groups' colors and keys, the ping-pong pairs, and refused jobs.
#include "backend/host_groups.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/error.h"

namespace megasim::backend {
namespace {

std::string thrown_key(const std::vector<std::string>& names) {
  try {
    group_by_host(names);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

TEST(HostGroups, ContiguousRanksOfTwoHosts) {
  const std::vector<std::string> names = {"gpu-a", "gpu-a", "gpu-a", "gpu-a", "gpu-b", "gpu-b", "gpu-b", "gpu-b"};
  const HostGroups g = group_by_host(names);
  EXPECT_EQ(g.hosts, (std::vector<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_EQ(g.host_count(), 2);
  EXPECT_EQ(g.world_size(), 8);
  EXPECT_EQ(g.ranks_per_host, 4);
  EXPECT_EQ(g.host_of, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(g.local_index, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_TRUE(g.measurable(HostLink::kIntraNode));
  EXPECT_TRUE(g.measurable(HostLink::kInterNode));
  EXPECT_EQ(g.members(HostLink::kIntraNode), 4);
  EXPECT_EQ(g.members(HostLink::kInterNode), 2);
  // Intra-node: one group per host, ordered by local index; inter-node: one group per local index
  // (rail), ordered by host.
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(g.color(HostLink::kIntraNode, r), r / 4) << r;
    EXPECT_EQ(g.key(HostLink::kIntraNode, r), r % 4) << r;
    EXPECT_EQ(g.color(HostLink::kInterNode, r), r % 4) << r;
    EXPECT_EQ(g.key(HostLink::kInterNode, r), r / 4) << r;
  }
  EXPECT_EQ(g.world_rank(1, 2), 6);
  EXPECT_EQ(g.ping_pong_pair(HostLink::kIntraNode), (std::pair{0, 1}));
  EXPECT_EQ(g.ping_pong_pair(HostLink::kInterNode), (std::pair{0, 4}));
}

TEST(HostGroups, RoundRobinPlacementIsGroupedByName) {
  // A launcher that places ranks round-robin: even ranks on one host, odd on the other.
  const std::vector<std::string> names = {"n1", "n2", "n1", "n2", "n1", "n2"};
  const HostGroups g = group_by_host(names);
  EXPECT_EQ(g.host_count(), 2);
  EXPECT_EQ(g.ranks_per_host, 3);
  EXPECT_EQ(g.host_of, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(g.local_index, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(g.ping_pong_pair(HostLink::kIntraNode), (std::pair{0, 2}));
  EXPECT_EQ(g.ping_pong_pair(HostLink::kInterNode), (std::pair{0, 1}));
  EXPECT_EQ(g.color(HostLink::kInterNode, 5), 2);
  EXPECT_EQ(g.key(HostLink::kInterNode, 5), 1);
}

TEST(HostGroups, OneHostHasNoInterNodeLinkAndOneRankPerHostNoIntraNodeLink) {
  const std::vector<std::string> one_host = {"h", "h", "h"};
  const HostGroups single = group_by_host(one_host);
  EXPECT_EQ(single.host_count(), 1);
  EXPECT_TRUE(single.measurable(HostLink::kIntraNode));
  EXPECT_FALSE(single.measurable(HostLink::kInterNode));
  EXPECT_EQ(single.members(HostLink::kIntraNode), 3);

  const std::vector<std::string> spread = {"a", "b", "c", "d"};
  const HostGroups rails = group_by_host(spread);
  EXPECT_EQ(rails.ranks_per_host, 1);
  EXPECT_FALSE(rails.measurable(HostLink::kIntraNode));
  EXPECT_TRUE(rails.measurable(HostLink::kInterNode));
  EXPECT_EQ(rails.members(HostLink::kInterNode), 4);
  EXPECT_EQ(rails.ping_pong_pair(HostLink::kInterNode), (std::pair{0, 1}));

  const std::vector<std::string> alone = {"solo"};
  const HostGroups one = group_by_host(alone);
  EXPECT_FALSE(one.measurable(HostLink::kIntraNode));
  EXPECT_FALSE(one.measurable(HostLink::kInterNode));
}

TEST(HostGroups, UnequalHostsAndEmptyJobsAreRefused) {
  EXPECT_EQ(thrown_key({"a", "a", "b"}), "cluster.gpus_per_server");
  EXPECT_EQ(thrown_key({"a", "b", "b", "a", "c"}), "cluster.gpus_per_server");
  EXPECT_EQ(thrown_key({}), "cluster.gpus");
  EXPECT_EQ(thrown_key({"a", ""}), "cluster.gpus");
  try {
    group_by_host(std::vector<std::string>{"a", "a", "b"});
  } catch (const sim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a: 2 ranks, b: 1"), std::string::npos) << e.what();
  }
}

TEST(HostGroups, LinkNames) {
  EXPECT_EQ(to_string(HostLink::kIntraNode), "intra-node");
  EXPECT_EQ(to_string(HostLink::kInterNode), "inter-node");
}

}  // namespace
}  // namespace megasim::backend
