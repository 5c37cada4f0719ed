#include "sim/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/stats.h"

namespace megasim::sim {
namespace {

TEST(RngStreams, SameNameSameSequenceDifferentNamesDiffer) {
  const RngStreams streams(42);
  Rng a = streams.stream("fabric.qpn");
  Rng b = streams.stream("fabric.qpn");
  Rng c = streams.stream("stragglers");
  bool any_differs = false;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    any_differs |= (x != c.next_u64());
  }
  EXPECT_TRUE(any_differs);
  EXPECT_NE(RngStreams(1).stream_seed("x"), RngStreams(2).stream_seed("x"));
}

TEST(Rng, SplitMixMatchesReferenceVector) {
  // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(splitmix64(state), 0x6E789E6AA1B965F4ULL);
}

TEST(Rng, UniformIntIsInRangeAndCoversIt) {
  Rng rng(7);
  std::vector<int> hits(6, 0);
  for (int i = 0; i < 6000; ++i) {
    const std::uint64_t v = rng.uniform_int(6);
    ASSERT_LT(v, 6u);
    ++hits[v];
  }
  for (const int h : hits) EXPECT_GT(h, 800);  // expected 1000 each; 800 is > 6 sigma away
}

TEST(Rng, DistributionMomentsMatchWithinSamplingError) {
  Rng rng(2024);
  constexpr int kN = 200000;
  std::vector<double> u, e, n;
  for (int i = 0; i < kN; ++i) {
    u.push_back(rng.uniform01());
    e.push_back(rng.exponential(3.0));
    n.push_back(rng.normal(5.0, 2.0));
  }
  // Standard errors: uniform sd/sqrt(N) = 0.289/447 ~ 6.5e-4; exponential 3/447 ~ 6.7e-3; normal 2/447.
  EXPECT_NEAR(mean(u), 0.5, 5 * 6.5e-4);
  EXPECT_NEAR(mean(e), 3.0, 5 * 6.7e-3);
  EXPECT_NEAR(mean(n), 5.0, 5 * 4.5e-3);
  EXPECT_NEAR(stddev(n), 2.0, 0.02);
  for (const double x : u) ASSERT_TRUE(x >= 0.0 && x < 1.0);
}

}  // namespace
}  // namespace megasim::sim
