// The campaign study's phases (campaign_phases.h): any split of the seeds into ranges, and the
// simulations run one by one in any order, give run_campaign_study's report to the byte; a
// simulation the times lack is run by the seeds and merged; the phases refuse inputs that do not
// fit together, naming what is wrong.
#include "scenarios/studies/campaign/campaign_phases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/studies/campaign/campaign_report.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::thrown_key;

// 300x the public failure rates and drift: 3 days of 7 seeds reach damaged states and drift knots.
Scenario busy() {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  s.failures.rate_scale = 300;
  s.stragglers.drift_per_hour = 0.01;
  return s;
}

CampaignOptions options() {
  CampaignOptions o;
  o.days = 3;
  o.seeds = 7;
  o.sweep = true;
  o.threads = 1;
  return o;
}

struct Phased {
  std::vector<SimulatedIteration> times;
  std::vector<CampaignSeeds> seeds;
  std::string json;
};

// The phases as a distributed run calls them: seeds in ranges of `per_range`, the simulations in
// reverse order.
Phased run_in_phases(const Scenario& s, const CampaignOptions& o, std::int64_t per_range) {
  TopologyCache topologies;
  std::vector<CampaignReach> reaches;
  for (std::int64_t f = 0; f < o.seeds; f += per_range) {
    reaches.push_back(reach_campaign_states(s, o, f, std::min(per_range, o.seeds - f), topologies));
  }
  const std::vector<CampaignSimulation> simulations = campaign_simulations(s, o, reaches, topologies);
  Phased p;
  p.times.resize(simulations.size());
  for (std::size_t i = simulations.size(); i-- > 0;) {
    p.times[i] = {simulations[i], simulate_campaign_state(s, simulations[i], topologies)};
  }
  for (std::int64_t f = 0; f < o.seeds; f += per_range) {
    p.seeds.push_back(run_campaign_seeds(s, o, p.times, f, std::min(per_range, o.seeds - f), topologies));
  }
  p.json = to_json(merge_campaign(s, o, p.times, p.seeds, topologies));
  return p;
}

TEST(CampaignPhases, AnySplitOfTheSeedsGivesTheStudysReport) {
  const Scenario s = busy();
  const CampaignReport whole = run_campaign_study(s, options());
  ASSERT_GE(whole.damaged_iterations.size(), 2u);
  ASSERT_GE(whole.drift_iterations.size(), 3u);
  ASSERT_GE(whole.sweep.size(), 5u);
  const std::string expected = to_json(whole);
  for (const std::int64_t per_range : {1, 2, 3, 7}) {
    const Phased p = run_in_phases(s, options(), per_range);
    EXPECT_EQ(p.json, expected) << per_range << " seeds per range";
    // Healthy first, then the damaged states, then the knots: one simulation each.
    ASSERT_FALSE(p.times.empty());
    EXPECT_EQ(p.times.front().simulation, CampaignSimulation{});
    EXPECT_EQ(p.times.size(), 1 + whole.damaged_iterations.size() + whole.drift_iterations.size() - 1);
    for (const CampaignSeeds& range : p.seeds) EXPECT_TRUE(range.extra.empty());
  }
}

TEST(CampaignPhases, ASimulationTheTimesLackIsRunByTheSeedsAndMerged) {
  const Scenario s = busy();
  const CampaignOptions o = options();
  const Phased p = run_in_phases(s, o, 7);
  // Without the last knot, the seeds that reach its interval simulate it themselves.
  std::vector<SimulatedIteration> fewer = p.times;
  const auto last = std::max_element(fewer.begin(), fewer.end(), [](const auto& a, const auto& b) {
    return a.simulation.drift_knot < b.simulation.drift_knot;
  });
  ASSERT_GT(last->simulation.drift_knot, 0);
  const SimulatedIteration missing = *last;
  fewer.erase(last);
  TopologyCache topologies;
  const std::vector<CampaignSeeds> seeds{run_campaign_seeds(s, o, fewer, 0, o.seeds, topologies)};
  ASSERT_EQ(seeds[0].extra.size(), 1u);
  EXPECT_EQ(seeds[0].extra[0].simulation, missing.simulation);
  EXPECT_EQ(seeds[0].extra[0].iteration_time_s, missing.iteration_time_s);
  EXPECT_EQ(to_json(merge_campaign(s, o, fewer, seeds, topologies)), p.json);
}

TEST(CampaignPhases, MismatchedInputsNameWhatIsWrong) {
  const Scenario s = busy();
  const CampaignOptions o = options();
  const Phased p = run_in_phases(s, o, 3);  // ranges [0, 3), [3, 6), [6, 7)
  TopologyCache topologies;
  const auto merge = [&](std::vector<CampaignSeeds> seeds) {
    return [&, seeds] { (void)merge_campaign(s, o, p.times, seeds, topologies); };
  };
  EXPECT_EQ(thrown_key(merge({p.seeds[0], p.seeds[1]})), "seeds");              // seed 6 missing
  EXPECT_EQ(thrown_key(merge({p.seeds[1], p.seeds[0], p.seeds[2]})), "seeds");  // out of order
  EXPECT_EQ(thrown_key(merge({p.seeds[0], p.seeds[0], p.seeds[1]})), "seeds");  // a range twice
  CampaignSeeds short_rows = p.seeds[2];
  short_rows.sweep_ettr[0].pop_back();
  EXPECT_EQ(thrown_key(merge({p.seeds[0], p.seeds[1], short_rows})), "seeds");  // a sweep row too short
  EXPECT_EQ(thrown_key([&] { (void)run_campaign_seeds(s, o, p.times, 5, 3, topologies); }), "seeds");
  EXPECT_EQ(thrown_key([&] { (void)run_campaign_seeds(s, o, p.times, 0, 0, topologies); }), "seeds");
  EXPECT_EQ(thrown_key([&] { (void)reach_campaign_states(s, o, -1, 1, topologies); }), "seeds");
  std::vector<SimulatedIteration> bad = p.times;
  bad[0].iteration_time_s = 0;
  EXPECT_EQ(thrown_key([&] { (void)run_campaign_seeds(s, o, bad, 0, 1, topologies); }), "times");
  EXPECT_EQ(thrown_key([&] {
              (void)simulate_campaign_state(s, {FabricDamage{{5, 0, 0, 0}}, 0}, topologies);
            }),
            "simulation.failed");
  EXPECT_EQ(thrown_key([&] {
              (void)simulate_campaign_state(s, {FabricDamage{}, 19}, topologies);
            }),
            "simulation.drift_knot");
  EXPECT_EQ(thrown_key([&] {
              (void)simulate_campaign_state(s, {FabricDamage{{1, 0, 0, 0}}, 1}, topologies);
            }),
            "simulation.drift_knot");
  Scenario steady = s;
  steady.stragglers.drift_per_hour = 0;
  EXPECT_EQ(thrown_key([&] {
              (void)simulate_campaign_state(steady, {FabricDamage{}, 1}, topologies);
            }),
            "simulation.drift_knot");
  // The last knot sits at the longest campaign's end (3650 days), a valid uptime.
  EXPECT_EQ(drift_knot_uptime_s(kLastDriftKnot), 3650 * 86400.0);
  EXPECT_EQ(drift_knot_uptime_s(kLastDriftKnot - 1), 3600 * 65536.0);
  EXPECT_GT(simulate_campaign_state(s, {FabricDamage{}, kLastDriftKnot}, topologies), 0);
}

}  // namespace
}  // namespace megasim::scenarios
