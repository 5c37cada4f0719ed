// Campaigns on a partitioned fabric (campaign_engine.h, campaign_oracle.h): which hosts a cut leaves
// behind, the engine's handling of it (the job fails at the NCCL timeout, the hosts cut off are
// evicted, the part never counts in the damage), and a whole campaign at a high switch failure
// rate, which used to end in "internal error: the workload deadlocked".
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "scenarios/config/loader.h"
#include "scenarios/config/scenario.h"
#include "scenarios/studies/campaign/campaign_oracle.h"
#include "scenarios/studies/campaign/campaign_study.h"
#include "tests/scenarios/campaign_test_util.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

using testing::fixed_cost_config;
using testing::kDay;
using testing::lost;

// tests/data/campaign_small.toml's fabric: 64 GPUs, 2 per server on 2 rails, radix 8. A ToR has 4
// uplinks, one to each aggregation switch (plane) of its pod; a pod is 2 rail-ToR groups of 8
// servers (16 servers, 32 GPUs), and core plane i joins aggregation switch i of both pods.
topo::Topology small_fabric() {
  return topo::Topology::build(
      effective_cluster(load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml")));
}

std::vector<topo::LinkId> links_of_switches(const topo::Topology& t, const std::vector<topo::NodeId>& switches) {
  std::vector<topo::LinkId> out;
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const topo::Link& l = t.link(topo::LinkId(static_cast<std::int32_t>(i)));
    for (const topo::NodeId s : switches) {
      if (l.from == s || l.to == s) out.emplace_back(static_cast<std::int32_t>(i));
    }
  }
  return out;
}

TEST(CampaignPartition, AHealthyOrMerelyDamagedFabricCutsNobodyOff) {
  const topo::Topology t = small_fabric();
  EXPECT_EQ(disconnected_hosts(t, {}), 0);
  // Three of pod 0's four aggregation switches: its ToRs keep plane 3, which still joins both pods.
  EXPECT_EQ(disconnected_hosts(t, links_of_switches(t, {t.agg(0, 0), t.agg(0, 1), t.agg(0, 2)})), 0);
}

// All four aggregation switches of pod 0: its four ToRs reach nothing (not even each other), pod 1's
// four reach each other but not pod 0's. The greedy rule removes pod 0's ToRs (7 unreachable each,
// against 4 for pod 1's) and stops: pod 0's 16 servers are cut off.
TEST(CampaignPartition, APodWithoutAggregationSwitchesIsCutOff) {
  const topo::Topology t = small_fabric();
  EXPECT_EQ(disconnected_hosts(t, links_of_switches(t, {t.agg(0, 0), t.agg(0, 1), t.agg(0, 2), t.agg(0, 3)})), 16);
}

// One aggregation switch in each plane, alternating pods: no plane joins the pods any more, while
// each pod's ToRs still reach each other through its two live aggregation switches. Either pod is
// cut off from the other; the greedy rule keeps the one whose first ToR comes last: 16 servers.
TEST(CampaignPartition, EveryPlaneBrokenSplitsThePods) {
  const topo::Topology t = small_fabric();
  EXPECT_EQ(disconnected_hosts(t, links_of_switches(t, {t.agg(0, 0), t.agg(1, 1), t.agg(0, 2), t.agg(1, 3)})), 16);
}

// The engine with an oracle in which every aggregation switch failure partitions the fabric and cuts
// 4 hosts off: each failure while training stalls the job for the NCCL timeout (7.5 s) and fails
// it; the 4 hosts are evicted, and with 2 spares the job waits for them until the switch is
// repaired (1 h after the failure). The switch never slows training: no degraded time.
TEST(CampaignPartition, APartitionFailsTheJobAtTheTimeoutAndEvictsTheHostsCutOff) {
  CampaignConfig c = fixed_cost_config(20 * kDay);
  c.processes = {models::FailureProcess{"switch.agg", models::Component::kSwitch, models::FailureEffect::kDamage,
                                        models::FabricTier::kTorAgg, true, 1 / kDay, 0, 3600}};
  c.stall_timeout_s = 7.5;
  c.recovery.spare_hosts = 2;
  CampaignOracle oracle = testing::closed_form_oracle();
  oracle.iteration_time_s = [](const FabricDamage& d) {
    return d.healthy() ? 1.0 : std::numeric_limits<double>::infinity();
  };
  oracle.disconnected_hosts = [](const FabricDamage&) { return std::int64_t{4}; };
  const SeedOutcome o = run_campaign_seed(c, oracle, 5, true);
  const auto failures = o.failures[static_cast<std::size_t>(models::Component::kSwitch)];
  ASSERT_GE(failures, 5);
  std::int64_t partitions = 0;
  for (std::size_t i = 0; i < o.timeline.size(); ++i) {
    const TimelineEvent& e = o.timeline[i];
    if (e.kind != "partitioned") continue;
    ++partitions;
    EXPECT_EQ(e.value, 4);
    // The next job failure comes at the timeout (or at once, when the job was already recovering).
    for (std::size_t j = i + 1; j < o.timeline.size(); ++j) {
      if (o.timeline[j].kind != "job_failed") continue;
      EXPECT_LE(o.timeline[j].time_s - e.time_s, 7.5 + 1e-9);
      break;
    }
  }
  EXPECT_EQ(partitions, failures);
  EXPECT_GE(o.job_failures, 1);
  EXPECT_EQ(lost(o, LostCause::kDegraded), 0);
  EXPECT_GT(lost(o, LostCause::kWaitingForSpares), 0);
  EXPECT_LE(lost(o, LostCause::kWaitingForSpares), static_cast<double>(failures) * 3600);
  EXPECT_LE(lost(o, LostCause::kStall), 7.5 * static_cast<double>(failures) + 1e-9);
  const double accounted = o.productive_s + std::accumulate(o.lost_s.begin(), o.lost_s.end(), 0.0);
  EXPECT_NEAR(accounted, c.horizon_s, 1e-6 * c.horizon_s);
  // With spares enough, nobody waits.
  c.recovery.spare_hosts = 100;
  EXPECT_EQ(lost(run_campaign_seed(c, oracle, 5, false), LostCause::kWaitingForSpares), 0);
}

// `megasim campaign tests/data/campaign_small.toml --set failures.switch_mtbf_h=5000 --days 30`: at
// this rate four aggregation switches are sometimes down at once, which partitions a radix-8 Clos
// (the iteration simulation of such a state ends with flows stalled). The campaign completes and
// reports the partitioned state with the hosts it cuts off. (A damaged state can also run a little
// faster than the healthy one: fewer paths change the ECMP collisions.)
TEST(CampaignPartition, ACampaignAtAHighSwitchFailureRateCompletes) {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  apply_override(s, "failures.switch_mtbf_h=5000");
  CampaignOptions o;
  o.days = 30;
  o.seeds = 10;
  const CampaignReport r = run_campaign_study(s, o);
  bool partitioned = false;
  for (const DamagedIteration& d : r.damaged_iterations) {
    if (std::isinf(d.iteration_time_s)) {
      partitioned = true;
      EXPECT_GT(d.disconnected_hosts, 0);
      EXPECT_LT(d.disconnected_hosts, r.inventory.hosts);
    } else {
      EXPECT_EQ(d.disconnected_hosts, 0);
      EXPECT_GT(d.iteration_time_s, 0);
    }
  }
  EXPECT_TRUE(partitioned) << "no state partitioned the fabric: the case tests nothing";
  EXPECT_GT(r.job_failures, 0);
  EXPECT_GT(r.ettr.mean, 0);
  EXPECT_LT(r.ettr.mean, 1);
}

// At switch_mtbf_h = 2000 seed 0 itself meets partitions (its timeline is the report's): each is
// logged with the hosts cut off, and the job fails within the NCCL timeout of it (7.5 s in
// campaign_small.toml, or at once when it was recovering already).
TEST(CampaignPartition, PartitionsInTheTimelineFailTheJobWithinTheTimeout) {
  Scenario s = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  apply_override(s, "failures.switch_mtbf_h=2000");
  CampaignOptions o;
  o.days = 30;
  o.seeds = 1;
  const CampaignReport r = run_campaign_study(s, o);
  int partitions = 0;
  for (std::size_t i = 0; i < r.timeline.size(); ++i) {
    if (r.timeline[i].kind != "partitioned") continue;
    ++partitions;
    EXPECT_GT(r.timeline[i].value, 0);
    bool failed = false;
    for (std::size_t j = i + 1; j < r.timeline.size() && !failed; ++j) {
      failed = r.timeline[j].kind == "job_failed" && r.timeline[j].time_s <= r.timeline[i].time_s + 7.5 + 1e-6;
    }
    EXPECT_TRUE(failed) << "no job failure within 7.5 s of the partition at " << r.timeline[i].time_s << " s";
  }
  EXPECT_GE(partitions, 1) << "seed 0 met no partition: the case tests nothing";
}

}  // namespace
}  // namespace megasim::scenarios
