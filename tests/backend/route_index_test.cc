// The fabric's route cache index: every key inserted is found (through growth of the table), a
// replacement wins, absent keys are not found, clear empties it.
#include "backend/sim/route_index.h"

#include <gtest/gtest.h>

#include <vector>

#include "backend/sim/fabric_route.h"  // CachedRoute

namespace megasim::backend {
namespace {

TEST(RouteIndex, FindsEveryKeyThroughGrowthAndReplacement) {
  RouteIndex index;
  EXPECT_EQ(index.find({0, 1, 0}), nullptr);
  // 5,000 keys that differ in one field at a time, as a fabric's lanes do: many table doublings.
  std::vector<CachedRoute> routes(5000);
  std::vector<LaneKey> keys;
  for (int i = 0; i < 5000; ++i) {
    keys.push_back({i % 97, i / 97, static_cast<std::uint32_t>(i % 3)});
    index.assign(keys.back(), &routes[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(index.size(), 5000u);
  for (int i = 0; i < 5000; ++i)
    EXPECT_EQ(index.find(keys[static_cast<std::size_t>(i)]), &routes[static_cast<std::size_t>(i)]);
  EXPECT_EQ(index.find({96, 0, 5}), nullptr);  // connection 5 never inserted
  CachedRoute replacement;
  index.assign(keys[123], &replacement);
  EXPECT_EQ(index.size(), 5000u);
  EXPECT_EQ(index.find(keys[123]), &replacement);
  EXPECT_EQ(index.find(keys[124]), &routes[124]);
  index.clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.find(keys[0]), nullptr);
}

}  // namespace
}  // namespace megasim::backend
