#include "sim/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace megasim::sim {
namespace {

TEST(Stats, MeanStddevPercentileByHand) {
  const std::vector<double> xs{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(xs), 5.0);
  EXPECT_NEAR(stddev(xs), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(percentile(xs, 0), 2);
  EXPECT_DOUBLE_EQ(percentile(xs, 100), 9);
  EXPECT_DOUBLE_EQ(percentile(xs, 50), 4.5);  // rank 3.5 between 4 and 5
  EXPECT_DOUBLE_EQ(percentile(xs, 25), 4.0);  // rank 1.75 between 4 and 4
}

TEST(Stats, RunningStatsAgreesWithTwoPass) {
  const std::vector<double> xs{1.5, -2, 8, 3.25, 0, 11};
  RunningStats rs;
  for (const double x : xs) rs.add(x);
  EXPECT_EQ(rs.count(), 6);
  EXPECT_NEAR(rs.mean(), mean(xs), 1e-12);
  EXPECT_NEAR(std::sqrt(rs.variance()), stddev(xs), 1e-12);
  EXPECT_EQ(rs.min(), -2);
  EXPECT_EQ(rs.max(), 11);
}

TEST(Stats, HistogramBinsAndOutOfRange) {
  Histogram h(0, 10, 5);
  for (const double x : {-1.0, 0.0, 1.9, 2.0, 9.99, 10.0, 15.0}) h.add(x);
  EXPECT_EQ(h.underflow(), 1);
  EXPECT_EQ(h.overflow(), 2);
  EXPECT_EQ(h.counts(), (std::vector<std::int64_t>{2, 1, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(h.bin_lower_edge(3), 6.0);
}

}  // namespace
}  // namespace megasim::sim
