// The fabric's region re-solve (backend/sim/fabric_local_solve.cc) on a whole iteration: MegaScale's
// 175B plan on 512 GPUs, whose DP rings and pipeline transfers share the Clos, gives the same trace
// as re-solving the whole connected component at every change, while solving far fewer flows.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {
namespace {

TEST(RegionSolve, IterationAgreesWithComponentSolve) {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale/175b_megascale.toml");
  s.cluster.gpus = 512;
  s.plan.global_batch_size = 64;  // DP 8, 8 micro-batches per replica
  const RunResult region = run_iteration_study(s);
  s.fabric.region_solve = false;
  const RunResult component = run_iteration_study(s);
  EXPECT_EQ(region.stats.flows, component.stats.flows);
  EXPECT_EQ(region.stats.rate_recomputations, component.stats.rate_recomputations);
  EXPECT_GT(region.stats.region_recomputations, region.stats.rate_recomputations / 2);
  EXPECT_EQ(component.stats.region_recomputations, 0u);
  // Both solves are exact to ~1e-15; completions are rounded up to whole nanoseconds, so a flow may
  // end 1 ns apart, and the iteration by a few ns at most.
  EXPECT_NEAR(static_cast<double>(region.trace.iteration_time), static_cast<double>(component.trace.iteration_time),
              10.0);
  ASSERT_EQ(region.trace.units.size(), component.trace.units.size());
  for (std::size_t u = 0; u < region.trace.units.size(); ++u) {
    const auto& a = region.trace.units[u].records;
    const auto& b = component.trace.units[u].records;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(static_cast<double>(a[i].end), static_cast<double>(b[i].end), 10.0);
  }
}

}  // namespace
}  // namespace megasim::scenarios
