#include "sim/repeats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace megasim::sim {
namespace {

TEST(FirstRepeat, NamesTheFirstItemThatRepeatsAnEarlierOne) {
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{}), std::nullopt);
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{7}), std::nullopt);
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{3, 1, 2}), std::nullopt);
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{3, 3}), 1U);
  // 9 repeats at index 3 and 5 at index 4: the earlier repeat in list order is named, whatever the
  // sorted order of the values.
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{9, 5, 1, 9, 5}), 3U);
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{5, 9, 1, 9, 5}), 3U);
  EXPECT_EQ(first_repeat(std::vector<std::int64_t>{1, 2, 2, 2}), 2U);
  EXPECT_EQ(first_repeat(std::vector<double>{600, 900, 600.0}), 2U);
  EXPECT_EQ(first_repeat(std::vector<std::string>{"ecmp", "spray"}), std::nullopt);
}

}  // namespace
}  // namespace megasim::sim
