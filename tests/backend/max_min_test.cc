#include "backend/sim/max_min.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/rng.h"

namespace megasim::backend {
namespace {

struct Use {
  std::uint32_t link;
  double weight;
};

MaxMinProblem make_problem(const std::vector<double>& capacities, const std::vector<std::vector<Use>>& flows) {
  MaxMinProblem p;
  for (double c : capacities) p.add_link(c);
  for (const auto& flow : flows) {
    for (const Use& u : flow) p.add_usage(u.link, u.weight);
    p.end_flow();
  }
  return p;
}

TEST(MaxMin, TwoFlowsOnOneLinkGetHalfEach) {
  const MaxMinProblem p = make_problem({10.0}, {{{0, 1.0}}, {{0, 1.0}}});
  const std::vector<double> r = solve_max_min(p);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
  EXPECT_EQ(check_max_min(p, r, 1e-9), "");
}

// Parking lot: A crosses links 0, 1, 2; B, C, D cross one link each. Capacities 10, 4, 12.
// Link 1 has the lowest fair level 4 / 2 = 2 (link 0: 10 / 2 = 5, link 2: 12 / 2 = 6), so A = C = 2.
// Then B gets what A leaves on link 0: 10 - 2 = 8, and D on link 2: 12 - 2 = 10.
TEST(MaxMin, ParkingLot) {
  const MaxMinProblem p = make_problem({10.0, 4.0, 12.0}, {{{0, 1}, {1, 1}, {2, 1}}, {{0, 1}}, {{1, 1}}, {{2, 1}}});
  const std::vector<double> r = solve_max_min(p);
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 8.0);
  EXPECT_DOUBLE_EQ(r[2], 2.0);
  EXPECT_DOUBLE_EQ(r[3], 10.0);
  EXPECT_EQ(check_max_min(p, r, 1e-9), "");
}

// Weight 2 and weight 1 on capacity 10: common rate r with 2r + r = 10, r = 10/3.
TEST(MaxMin, WeightsShareAtACommonRate) {
  const MaxMinProblem p = make_problem({10.0}, {{{0, 2.0}}, {{0, 1.0}}});
  const std::vector<double> r = solve_max_min(p);
  EXPECT_DOUBLE_EQ(r[0], 10.0 / 3);
  EXPECT_DOUBLE_EQ(r[1], 10.0 / 3);
}

// X crosses link 0 (cap 6) with weight 2 and link 1 (cap 100) with weight 1; Y crosses link 0,
// Z crosses link 1. Link 0's level 6 / (2 + 1) = 2 is below link 1's 100 / 2, so X = Y = 2 and
// Z takes the rest of link 1: 100 - 1 * 2 = 98.
TEST(MaxMin, WeightedFlowOverTwoLinks) {
  const MaxMinProblem p = make_problem({6.0, 100.0}, {{{0, 2.0}, {1, 1.0}}, {{0, 1.0}}, {{1, 1.0}}});
  const std::vector<double> r = solve_max_min(p);
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
  EXPECT_DOUBLE_EQ(r[2], 98.0);
}

TEST(MaxMin, ZeroCapacityLinkStallsItsFlows) {
  const MaxMinProblem p = make_problem({0.0, 10.0}, {{{0, 1}, {1, 1}}, {{0, 1}}, {{1, 1}}});
  const std::vector<double> r = solve_max_min(p);
  EXPECT_EQ(r[0], 0.0);
  EXPECT_EQ(r[1], 0.0);
  EXPECT_DOUBLE_EQ(r[2], 10.0);  // alone on link 1 once the stalled flow is frozen at 0
  EXPECT_EQ(check_max_min(p, r, 1e-9), "");
}

TEST(MaxMin, FlowWithoutLinksIsAnInternalError) {
  MaxMinProblem p;
  p.add_link(1.0);
  EXPECT_DEATH(p.end_flow(), "at least one link");
}

MaxMinProblem random_problem(std::uint64_t seed, int links, int flows, double zero_capacity_fraction) {
  sim::Rng rng(seed);
  MaxMinProblem p;
  for (int l = 0; l < links; ++l) {
    p.add_link(rng.uniform01() < zero_capacity_fraction ? 0.0 : 1.0 + 99.0 * rng.uniform01());
  }
  const double weights[] = {0.25, 0.5, 1.0, 2.0, 1.0 / 3};
  for (int f = 0; f < flows; ++f) {
    const auto hops = 1 + rng.uniform_int(6);
    for (std::uint64_t h = 0; h < hops; ++h) {
      p.add_usage(static_cast<std::uint32_t>(rng.uniform_int(static_cast<std::uint64_t>(links))),
                  weights[rng.uniform_int(5)]);
    }
    p.end_flow();
  }
  return p;
}

// Textbook progressive filling, O(flows * links) per step: raise every unfrozen flow by the largest
// common increment that keeps all links feasible, freeze the flows of saturated links, repeat.
std::vector<double> naive_progressive_filling(const MaxMinProblem& p) {
  std::vector<double> rate(p.num_flows(), 0.0);
  std::vector<bool> frozen(p.num_flows(), false);
  std::vector<double> used(p.num_links(), 0.0);
  for (;;) {
    std::vector<double> unfrozen_weight(p.num_links(), 0.0);
    for (std::size_t f = 0; f < p.num_flows(); ++f) {
      if (!frozen[f]) {
        for (const MaxMinEntry& e : p.usages(f)) unfrozen_weight[e.link] += e.weight;
      }
    }
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < p.num_links(); ++l) {
      if (unfrozen_weight[l] > 0) step = std::min(step, std::max(0.0, p.capacities[l] - used[l]) / unfrozen_weight[l]);
    }
    if (step == std::numeric_limits<double>::infinity()) return rate;
    for (std::size_t f = 0; f < p.num_flows(); ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (const MaxMinEntry& e : p.usages(f)) used[e.link] += e.weight * step;
    }
    for (std::size_t f = 0; f < p.num_flows(); ++f) {
      for (const MaxMinEntry& e : p.usages(f)) {
        if (unfrozen_weight[e.link] > 0 && used[e.link] >= p.capacities[e.link] * (1 - 1e-12)) frozen[f] = true;
      }
    }
  }
}

TEST(MaxMin, AgreesWithNaiveProgressiveFilling) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const MaxMinProblem p = random_problem(seed, 30, 60, 0.05);
    const std::vector<double> fast = solve_max_min(p);
    const std::vector<double> naive = naive_progressive_filling(p);
    for (std::size_t f = 0; f < p.num_flows(); ++f) {
      EXPECT_NEAR(fast[f], naive[f], 1e-9 * (1 + naive[f])) << "seed " << seed << " flow " << f;
    }
  }
}

// Fabric-shaped problems: each flow has its own NIC links (crossed by no other flow: the solver folds
// them into one cap per flow) and crosses a few shared switch links, some roomy enough never to bind
// (the solver leaves those out of its queue). Both shortcuts must keep the exact allocation.
MaxMinProblem fabric_like_problem(std::uint64_t seed) {
  sim::Rng rng(seed);
  MaxMinProblem p;
  constexpr int kShared = 12;
  constexpr int kFlows = 40;
  for (int l = 0; l < kShared; ++l) p.add_link(10.0 + 200.0 * rng.uniform01());
  for (int f = 0; f < kFlows; ++f) {
    const std::uint32_t up = p.add_link(5.0 + 20.0 * rng.uniform01());
    const std::uint32_t down = p.add_link(5.0 + 20.0 * rng.uniform01());
    p.add_usage(up, 1.0);
    const auto hops = 1 + rng.uniform_int(3);
    for (std::uint64_t h = 0; h < hops; ++h) {
      p.add_usage(static_cast<std::uint32_t>(rng.uniform_int(kShared)), h == 0 ? 1.0 : 0.5);
    }
    p.add_usage(down, 1.0);
    p.end_flow();
  }
  return p;
}

// For 30 seeds of the generator: the solver's allocation is max-min fair and equals plain
// progressive filling's.
void expect_solver_matches_naive_filling(MaxMinProblem (*generate)(std::uint64_t seed)) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const MaxMinProblem p = generate(seed);
    const std::vector<double> fast = solve_max_min(p);
    const std::vector<double> naive = naive_progressive_filling(p);
    EXPECT_EQ(check_max_min(p, fast, 1e-9), "") << "seed " << seed;
    for (std::size_t f = 0; f < p.num_flows(); ++f) {
      EXPECT_NEAR(fast[f], naive[f], 1e-9 * (1 + naive[f])) << "seed " << seed << " flow " << f;
    }
  }
}

TEST(MaxMin, FoldedPrivateLinksAndRoomyLinksKeepTheExactAllocation) {
  expect_solver_matches_naive_filling(fabric_like_problem);
}

// Sibling flows (the two channels of one ring): each pair crosses several links only the two of them
// use, with the same weights and different capacities, plus shared switch links. The solver keeps
// only the tightest of a pair's identical constraints in its queue; the allocation must not change.
MaxMinProblem sibling_problem(std::uint64_t seed) {
  sim::Rng rng(seed);
  MaxMinProblem p;
  constexpr int kShared = 6;
  constexpr int kPairs = 10;
  constexpr int kPairLinks = 5;
  for (int l = 0; l < kShared; ++l) p.add_link(20.0 + 100.0 * rng.uniform01());
  for (int pair = 0; pair < kPairs; ++pair) {
    std::vector<std::uint32_t> own;
    for (int l = 0; l < kPairLinks; ++l) own.push_back(p.add_link(10.0 + 30.0 * rng.uniform01()));
    const double w = pair % 3 == 0 ? 0.5 : 1.0;
    for (int sibling = 0; sibling < 2; ++sibling) {
      for (const std::uint32_t l : own) p.add_usage(l, w);
      p.add_usage(static_cast<std::uint32_t>(rng.uniform_int(kShared)), 1.0);
      p.end_flow();
    }
  }
  return p;
}

TEST(MaxMin, IdenticalPairConstraintsKeepTheExactAllocation) {
  expect_solver_matches_naive_filling(sibling_problem);
}

TEST(MaxMin, CheckerAcceptsSolverOutputOnLargeRandomProblems) {
  MaxMinSolver solver;  // reused across problems, as the fabric does
  std::vector<double> r;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const MaxMinProblem p = random_problem(seed, 2000, 5000, 0.01);
    solver.solve(p, r);
    EXPECT_EQ(check_max_min(p, r, 1e-9), "") << "seed " << seed;
  }
}

TEST(MaxMin, CheckerRejectsPerturbedAllocations) {
  const MaxMinProblem p = random_problem(7, 500, 2000, 0.0);
  const std::vector<double> r = solve_max_min(p);
  ASSERT_EQ(check_max_min(p, r, 1e-9), "");
  for (std::size_t f : {std::size_t{0}, std::size_t{999}, std::size_t{1999}}) {
    ASSERT_GT(r[f], 0.0);
    // Raising a flow overloads its saturated bottleneck link.
    std::vector<double> up = r;
    up[f] *= 1.01;
    EXPECT_NE(check_max_min(p, up, 1e-9), "") << "flow " << f;
    // Lowering it unsaturates every link on which it was the highest rate: no bottleneck left.
    std::vector<double> down = r;
    down[f] *= 0.99;
    EXPECT_NE(check_max_min(p, down, 1e-9), "") << "flow " << f;
  }
}

TEST(MaxMin, CheckerRejectsInfeasibleAndUnfairHandMadeAllocations) {
  const MaxMinProblem p = make_problem({10.0}, {{{0, 1.0}}, {{0, 1.0}}});
  EXPECT_NE(check_max_min(p, std::vector<double>{6.0, 6.0}, 1e-9), "");  // above capacity
  EXPECT_NE(check_max_min(p, std::vector<double>{4.0, 4.0}, 1e-9), "");  // link not saturated
  EXPECT_NE(check_max_min(p, std::vector<double>{3.0, 7.0}, 1e-9), "");  // flow 0 not the highest
  EXPECT_NE(check_max_min(p, std::vector<double>{5.0}, 1e-9), "");       // wrong size
}

TEST(MaxMin, ClearKeepsTheProblemReusable) {
  MaxMinProblem p = make_problem({10.0}, {{{0, 1.0}}});
  p.clear();
  EXPECT_EQ(p.num_flows(), 0u);
  EXPECT_EQ(p.num_links(), 0u);
  p.add_link(8.0);
  p.add_usage(0, 2.0);
  p.end_flow();
  EXPECT_DOUBLE_EQ(solve_max_min(p)[0], 4.0);  // 2r = 8
}

}  // namespace
}  // namespace megasim::backend
