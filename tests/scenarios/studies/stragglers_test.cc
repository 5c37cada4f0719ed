// Stragglers in a scenario (models/stragglers.h, straggler_draw.h, straggler_report.h): expected
// effects derived from the schedule, and the what-if analysis recovering them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/sim/straggler_draw.h"
#include "models/stragglers.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"
#include "tests/scenarios/straggler_test_util.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

using testing::dp_scenario;
using testing::whatif;

TEST(Stragglers, NoneLeaveTheIterationAsItWas) {
  Scenario s = dp_scenario();
  const RunResult plain = run_iteration_study(s);
  EXPECT_FALSE(plain.report.stragglers.has_value());
  // Active sources with no effect (a jitter of zero, a factor of 1) change nothing.
  apply_override(s, "stragglers.slow_hosts=1:1.0");
  const RunResult same = run_iteration_study(s);
  ASSERT_TRUE(same.report.stragglers.has_value());
  EXPECT_EQ(same.trace.iteration_time, plain.trace.iteration_time);
  EXPECT_DOUBLE_EQ(whatif(*same.report.stragglers, "no_stragglers").iteration_time_s, plain.report.iteration_time_s);
}

// stragglers.enabled = false is the ideal cluster: every source switched off at once (a slow host,
// jitter, pauses, drift at an uptime), the iteration exactly the nominal one, no straggler section.
TEST(Stragglers, DisabledSwitchesEverySourceOff) {
  Scenario s = dp_scenario();
  const RunResult nominal = run_iteration_study(s);
  apply_overrides(s, {"stragglers.slow_hosts=2:1.5", "stragglers.jitter_cv=0.1", "stragglers.gc_period_s=0.01",
                      "stragglers.gc_pause_s=0.001", "stragglers.drift_per_hour=0.01", "stragglers.uptime_h=10"});
  EXPECT_TRUE(s.stragglers.active());
  const RunResult production = run_iteration_study(s);
  EXPECT_GT(production.report.iteration_time_s, nominal.report.iteration_time_s);
  apply_override(s, "stragglers.enabled=false");
  EXPECT_FALSE(s.stragglers.active());
  EXPECT_FALSE(s.stragglers.drifts());
  const RunResult ideal = run_iteration_study(s);
  EXPECT_FALSE(ideal.report.stragglers.has_value());
  EXPECT_EQ(ideal.trace.iteration_time, nominal.trace.iteration_time);
}

// A host 10% slower stretches its unit's compute by 10%; as that unit is then the last to reach the
// reduction and the rest of the iteration is the same for all, the iteration grows by 10% of the
// unit's nominal compute: the critical unit's compute (1.1 x nominal) x 0.1 / 1.1. Replacing the
// host recovers the nominal iteration exactly. (Data loading is asynchronous here: a synchronous
// get_batch's host time is compute-stream time that a slow GPU does not stretch.)
TEST(Stragglers, ASlowHostCostsWhatItsComputeOnTheCriticalPathImplies) {
  Scenario s = dp_scenario();
  apply_override(s, "plan.async_data_loading=true");
  const RunResult nominal = run_iteration_study(s);
  apply_override(s, "stragglers.slow_hosts=2:1.1");
  const RunResult slow = run_iteration_study(s);
  ASSERT_TRUE(slow.report.stragglers.has_value());
  const StragglerReport& r = *slow.report.stragglers;
  EXPECT_EQ(slow.report.critical_replica, 2);
  const double expected = slow.report.critical.compute_s * 0.1 / 1.1;
  // Each task's duration is a whole number of nanoseconds: half a nanosecond of rounding per task.
  const double rounding = 1e-9 * static_cast<double>(slow.workload.stages[0].tasks.size());
  EXPECT_NEAR(slow.report.iteration_time_s - nominal.report.iteration_time_s, expected, rounding);
  EXPECT_EQ(r.slow_hosts, 1);
  ASSERT_EQ(r.slowest_hosts.size(), 1u);
  EXPECT_EQ(r.slowest_hosts[0].first, 2);
  EXPECT_NE(std::find(r.critical_hosts.begin(), r.critical_hosts.end(), 2), r.critical_hosts.end());
  EXPECT_DOUBLE_EQ(whatif(r, "replace_slowest_hosts").iteration_time_s, nominal.report.iteration_time_s);
  EXPECT_DOUBLE_EQ(whatif(r, "no_stragglers").iteration_time_s, nominal.report.iteration_time_s);
  // At the group's mean (1.025 x nominal for every replica) the iteration is in between.
  const double mean = whatif(r, "group_mean_compute").iteration_time_s;
  EXPECT_GT(mean, nominal.report.iteration_time_s);
  EXPECT_LT(mean, slow.report.iteration_time_s);
  // The added compute is the slow unit's 10% of every category it computes.
  double added = 0;
  for (const auto& [category, seconds] : r.added_compute_s) {
    EXPECT_GE(seconds, 0) << category;
    added += seconds;
  }
  EXPECT_NEAR(added, expected, rounding);
}

TEST(Stragglers, SynchronizedPausesCostThePausesThatFallInTheIteration) {
  Scenario s = dp_scenario();
  const double t0 = run_iteration_study(s).report.iteration_time_s;
  const double period = t0 / 3.5;
  const double pause = t0 / 100;
  apply_override(s, "stragglers.gc_period_s=" + std::to_string(period));
  apply_override(s, "stragglers.gc_pause_s=" + std::to_string(pause));
  apply_override(s, "stragglers.gc_synchronized=true");
  const double t = run_iteration_study(s).report.iteration_time_s;
  // Every rank pauses at 0, P, 2P, 3P (all within t0 + 4 pauses < 4P): at most 4 pauses, and at
  // least the 3 that fall while every rank computes, are added.
  EXPECT_GE(t - t0, 3 * pause * (1 - 1e-6));
  EXPECT_LE(t - t0, 4 * pause * (1 + 1e-6));
}

// Unplanned, each of a TP group's 8 ranks pauses on its own phase and the group waits for each, so
// a group loses about 8 times what the same pauses cost when planned (all ranks at once). Bounds
// from the pause count: a rank's pauses cost while its group computes (compute and exposed TP
// time, S in all, the DP reduction in between), so a rank meets at least floor(S / P) - 1 of them,
// and at most the ceil(T / P) of the whole iteration T; overlapping pauses of two ranks cost their
// union (a rank is paused 1% of the time: about 14% of pauses overlap another, by half on average,
// so at most 20% are lost).
TEST(Stragglers, UnplannedPausesOfATpGroupsRanksAdd) {
  Scenario s = dp_scenario();
  const IterationReport nominal = run_iteration_study(s).report;
  const double t0 = nominal.iteration_time_s;
  const double period = t0 / 10;
  const double pause = t0 / 1000;
  apply_override(s, "stragglers.gc_period_s=" + std::to_string(period));
  apply_override(s, "stragglers.gc_pause_s=" + std::to_string(pause));
  apply_override(s, "stragglers.gc_synchronized=true");
  const double planned = run_iteration_study(s).report.iteration_time_s - t0;
  apply_override(s, "stragglers.gc_synchronized=false");
  const double unplanned = run_iteration_study(s).report.iteration_time_s - t0;
  const double met = std::floor((nominal.mean.compute_s + nominal.mean.tp_exposed_s) / period) - 1;
  const auto most = [&](double added) { return std::ceil((t0 + added) / period); };
  EXPECT_GE(planned, met * pause * (1 - 1e-6));
  EXPECT_LE(planned, most(planned) * pause * (1 + 1e-6));
  EXPECT_GE(unplanned, 0.8 * 8 * met * pause);
  EXPECT_LE(unplanned, 8 * most(unplanned) * pause * (1 + 1e-6));
  // The property itself: the independent phases give about 8x (each rank's pauses in full, less
  // the ~7% lost to overlaps); at least half of that.
  EXPECT_GT(unplanned, 4 * planned);
}

TEST(Stragglers, DrawsAreDeterministicAndFollowTheirParameters) {
  Scenario s = dp_scenario();
  apply_override(s, "stragglers.jitter_cv=0.05");
  apply_override(s, "stragglers.seq_length_cv=0.2");
  const RunResult a = run_iteration_study(s);
  const RunResult b = run_iteration_study(s);
  EXPECT_EQ(a.trace.iteration_time, b.trace.iteration_time);
  apply_override(s, "simulation.seed=7");
  const RunResult c = run_iteration_study(s);
  EXPECT_NE(a.trace.iteration_time, c.trace.iteration_time);
  // Variation only slows a synchronous job down against its mean: the slowest replica sets the pace.
  const StragglerReport& r = *a.report.stragglers;
  EXPECT_GT(r.iteration_time_s, whatif(r, "no_stragglers").iteration_time_s);
}

TEST(Stragglers, SlowHostFractionDrawsAboutThatManyHosts) {
  models::StragglerParams p;
  p.slow_host_fraction = 0.1;
  topo::ClusterParams c;
  c.gpus = 8 * 2000;
  const topo::Topology topology = topo::Topology::build(c);
  models::Workload w;
  w.plan.tp = w.plan.pp = w.plan.dp = 1;
  w.stages.resize(1);
  const backend::StragglerDraw d = backend::draw_stragglers(p, w, topology, 1);
  int slow = 0;
  for (const double f : d.host_slowdown) slow += f > 1 ? 1 : 0;
  // Binomial(2000, 0.1): mean 200, standard deviation 13.4; 5 sigma either way.
  EXPECT_NEAR(slow, 200, 67);
  for (const double f : d.host_slowdown) EXPECT_TRUE(f == 1.0 || std::abs(f - 1.1) < 1e-12);
}

// Unplanned, every rank's process collects on its own phase; planned, a unit's ranks share one.
TEST(Stragglers, UnplannedPausesHaveAPhasePerRank) {
  models::StragglerParams p;
  p.gc_period_s = 10;
  p.gc_pause_s = 1;
  topo::ClusterParams c;
  c.gpus = 8;
  const topo::Topology topology = topo::Topology::build(c);
  models::Workload w;
  w.plan.tp = 4;
  w.plan.pp = 1;
  w.plan.dp = 2;
  w.stages.resize(1);
  const backend::StragglerDraw unplanned = backend::draw_stragglers(p, w, topology, 1);
  ASSERT_EQ(unplanned.gc_phase.size(), 8u);
  for (const sim::SimTime phase : unplanned.gc_phase) {
    EXPECT_GE(phase, 0);
    EXPECT_LT(phase, 10 * sim::kSecond);
  }
  p.gc_synchronized = true;
  EXPECT_EQ(backend::draw_stragglers(p, w, topology, 1).gc_phase, std::vector<sim::SimTime>(2, 0));
  // Four ranks of 3 s pauses on their own phases could fill a 10 s period: refused, naming the pause.
  p.gc_synchronized = false;
  p.gc_pause_s = 3;
  try {
    static_cast<void>(backend::draw_stragglers(p, w, topology, 1));
    ADD_FAILURE() << "accepted pauses that may leave no time to compute";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "stragglers.gc_pause_s");
  }
}

// Megatron's last stage also computes the logits and the loss: spreading that evenly (its compute
// scaled down to the other stages' mean) cannot lengthen the iteration. With one stage there is no
// last stage to balance.
TEST(Stragglers, BalancingTheLastStageShortensAPipeline) {
  Scenario s = dp_scenario();
  apply_override(s, "stragglers.slow_hosts=0:1.0");
  const StragglerReport one_stage = *run_iteration_study(s).report.stragglers;
  for (const StragglerWhatIf& w : one_stage.whatifs) EXPECT_NE(w.name, "balanced_last_stage");
  apply_override(s, "plan.pipeline_model_parallel_size=2");
  apply_override(s, "plan.tensor_model_parallel_size=4");
  const StragglerReport two_stages = *run_iteration_study(s).report.stragglers;
  const StragglerWhatIf& balanced = whatif(two_stages, "balanced_last_stage");
  EXPECT_NE(balanced.description.find("x0."), std::string::npos) << balanced.description;
  EXPECT_LT(balanced.iteration_time_s, whatif(two_stages, "no_stragglers").iteration_time_s);
}

// A slow NIC slows the data-parallel reduction that crosses it, never speeds anything up, and the
// no-stragglers what-if is the nominal iteration.
TEST(Stragglers, ASlowNicSlowsTheCollectivesThatCrossIt) {
  Scenario s = dp_scenario();
  const double nominal = run_iteration_study(s).report.iteration_time_s;
  double previous = nominal;
  for (const char* factor : {"1.5", "3"}) {
    apply_override(s, std::string("stragglers.slow_nics=16:") + factor);  // GPU 16: server 2's first
    const RunResult r = run_iteration_study(s);
    EXPECT_GT(r.report.iteration_time_s, previous) << factor;
    previous = r.report.iteration_time_s;
    EXPECT_DOUBLE_EQ(whatif(*r.report.stragglers, "no_stragglers").iteration_time_s, nominal);
  }
}

TEST(Stragglers, BadParametersNameTheirKey) {
  const auto key_of = [](const std::string& assignment) -> std::string {
    Scenario s = dp_scenario();
    try {
      apply_override(s, assignment);
      static_cast<void>(run_iteration_study(s));
    } catch (const sim::ConfigError& e) {
      return e.key();
    }
    return "accepted";
  };
  EXPECT_EQ(key_of("stragglers.slow_host_fraction=1.5"), "stragglers.slow_host_fraction");
  EXPECT_EQ(key_of("stragglers.slow_host_factor=0.9"), "stragglers.slow_host_factor");
  EXPECT_EQ(key_of("stragglers.jitter_cv=-0.1"), "stragglers.jitter_cv");
  EXPECT_EQ(key_of("stragglers.gc_pause_s=1"), "stragglers.gc_period_s");
  EXPECT_EQ(key_of("stragglers.slow_hosts=4:1.2"), "stragglers.slow_hosts");  // 4 servers: ids 0 to 3
  EXPECT_EQ(key_of("stragglers.slow_hosts=x"), "stragglers.slow_hosts");
  EXPECT_EQ(key_of("stragglers.slow_gpus=3:0.5"), "stragglers.slow_gpus");
  EXPECT_EQ(key_of("stragglers.whatif_replaced_hosts=-1"), "stragglers.whatif_replaced_hosts");
  EXPECT_EQ(key_of("stragglers.slow_nics=32:2"), "stragglers.slow_nics");  // 32 GPUs: ids 0 to 31
  EXPECT_EQ(key_of("stragglers.slow_nics=3:0.5"), "stragglers.slow_nics");
  EXPECT_EQ(key_of("stragglers.slow_links=99999999:2"), "stragglers.slow_links");
}

// An id listed twice is refused, in every list: its factors would compound (3:1.2,3:1.1 made
// server 3 1.32x slower), which no reading of the list intends.
TEST(Stragglers, AnIdListedTwiceIsRefusedNotCompounded) {
  for (const char* key : {"slow_hosts", "slow_gpus", "slow_nics", "slow_links"}) {
    const std::string list = std::string(key) == "slow_hosts" ? "1:1.2,2:1.5,1:1.1" : "1:1.2,2:1.5,1:1.2";
    try {
      static_cast<void>(models::parse_factor_list(list, std::string("stragglers.") + key));
      ADD_FAILURE() << key << " accepted " << list;
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), std::string("stragglers.") + key);
      EXPECT_NE(std::string(e.what()).find("1 is listed twice"), std::string::npos) << e.what();
    }
    Scenario s = dp_scenario();
    apply_override(s, std::string("stragglers.") + key + "=" + list);
    EXPECT_THROW(static_cast<void>(run_iteration_study(s)), sim::ConfigError) << key;
  }
  EXPECT_EQ(models::parse_factor_list("1:1.2,2:1.5", "stragglers.slow_hosts").size(), 2U);
}

}  // namespace
}  // namespace megasim::scenarios
