// The campaign study: inventory from the topology, the fabric probe behind flap stalls, damaged
// iterations, determinism of the report, the sweep, and errors naming the bad key.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/campaign/campaign_oracle.h"
#include "scenarios/studies/campaign/campaign_report.h"
#include "scenarios/studies/campaign/campaign_study.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::thrown_key;

Scenario small() {
  return load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
}

// models/reliability.h spreads Llama 3's switch/cable failures over the cables and switches of a
// MegaScale-style Clos of 16,384 GPUs: 32,768 cables and 1,536 switches.
TEST(CampaignStudy, InventoryOfTheReferenceClos) {
  Scenario s;
  s.cluster.gpus = 16384;
  const models::ClusterInventory inv = cluster_inventory(topo::Topology::build(effective_cluster(s)));
  EXPECT_EQ(inv.cables[0] + inv.cables[1] + inv.cables[2], 32768);
  EXPECT_EQ(inv.switches[0] + inv.switches[1] + inv.switches[2], 1536);
  EXPECT_EQ(inv.hosts, 2048);
  EXPECT_EQ(inv.nics, 16384);
}

// MegaScale's 12,288 GPUs: 1,536 hosts, one NIC cable per GPU, half a ToR uplink and half an
// aggregation uplink per GPU (1:1 with 400G uplinks over 200G NICs), 64 hosts per rail ToR.
TEST(CampaignStudy, InventoryOfMegaScale) {
  Scenario s;
  s.cluster.gpus = 12288;
  const models::ClusterInventory inv = cluster_inventory(topo::Topology::build(effective_cluster(s)));
  EXPECT_EQ(inv.hosts, 1536);
  EXPECT_EQ(inv.cables[0], 12288);
  EXPECT_EQ(inv.cables[1], 6144);
  EXPECT_EQ(inv.cables[2], 6144);
  EXPECT_EQ(inv.switches[0], 192);
  EXPECT_EQ(inv.hosts_per_tor, 64);
}

// The fabric's own semantics (backend/sim/fabric.h): a downed NIC cable stalls its flow for the whole
// outage; a switch-to-switch cable stalls it for the outage or until detection (50 ms), whichever
// comes first, after which the flow runs on another uplink.
TEST(CampaignStudy, ProbeStallsFollowTheFabric) {
  const Scenario s = small();
  const topo::Topology t = topo::Topology::build(effective_cluster(s));
  ASSERT_EQ(t.tiers(), 3);
  const double detection = 0.05;
  EXPECT_NEAR(probe_stall_s(t, s.fabric, models::FabricTier::kNic, 5.0), 5.0, 1e-8);
  EXPECT_NEAR(probe_stall_s(t, s.fabric, models::FabricTier::kTorAgg, 5.0), detection, 1e-8);
  EXPECT_NEAR(probe_stall_s(t, s.fabric, models::FabricTier::kAggCore, 5.0), detection, 1e-8);
  EXPECT_NEAR(probe_stall_s(t, s.fabric, models::FabricTier::kTorAgg, 0.02), 0.02, 1e-8);
  const IterationOracle oracle(s, std::make_shared<const topo::Topology>(t));
  EXPECT_NEAR(oracle.stall_s(models::FabricTier::kNic, 12.0), 12.0, 1e-8);
  EXPECT_NEAR(oracle.stall_s(models::FabricTier::kAggCore, 12.0), detection, 1e-8);
  EXPECT_NEAR(oracle.stall_s(models::FabricTier::kAggCore, 0.01), 0.01, 1e-8);
}

// Each damaged state is one iteration simulation with those parts routed around, cached; more than
// kMaxSimulatedDamage failed parts of a kind count as that many.
TEST(CampaignStudy, DamagedStatesAreSimulatedOnceEach) {
  const Scenario s = small();
  const auto t = std::make_shared<const topo::Topology>(topo::Topology::build(effective_cluster(s)));
  IterationOracle oracle(s, t);
  const double healthy = oracle.iteration_time_s({});
  FabricDamage one_core;
  one_core.failed[3] = 1;
  const double damaged = oracle.iteration_time_s(one_core);
  EXPECT_GT(damaged, 0.5 * healthy);
  EXPECT_EQ(oracle.iteration_time_s(one_core), damaged);
  FabricDamage many = one_core;
  many.failed[0] = 9;
  FabricDamage capped = one_core;
  capped.failed[0] = kMaxSimulatedDamage;
  EXPECT_EQ(oracle.iteration_time_s(many), oracle.iteration_time_s(capped));
  EXPECT_EQ(oracle.simulated().size(), 3u);
}

// Flaps alone, through the fabric probe: NIC-cable flaps of 5 s stall the job for 5 s each and never
// fail it under a 7.5 s NCCL timeout; flaps of 10 s fail it (those on NIC cables, which have no other
// path; a switch-to-switch cable's flows move after 50 ms whatever the flap's length).
TEST(CampaignStudy, FlapsShorterThanTheTimeoutStallLongerOnesFailTheJob) {
  Scenario s = small();
  for (const char* key : {"gpu", "hbm", "host", "nic", "link", "switch", "software"}) {
    apply_override(s, std::string("failures.") + key + "_mtbf_h=0");
  }
  s.failures.link_flap_mtbf_h = 1000;  // 256 cables: a flap every ~4 h
  s.failures.link_flap_durations = models::FlapDurations::kFixed;
  const CampaignOptions o{.days = 10, .seeds = 2, .sweep = false, .sweep_intervals_s = {}};
  s.failures.link_flap_duration_s = 5;
  const CampaignReport short_flaps = run_campaign_study(s, o);
  ASSERT_GT(short_flaps.flaps, 20);
  EXPECT_EQ(short_flaps.job_failures, 0);
  EXPECT_GT(short_flaps.lost_s[static_cast<std::size_t>(LostCause::kStall)], 5 * 5);
  EXPECT_EQ(short_flaps.lost_s[static_cast<std::size_t>(LostCause::kLostWork)], 0);
  s.failures.link_flap_duration_s = 10;
  const CampaignReport long_flaps = run_campaign_study(s, o);
  EXPECT_EQ(long_flaps.flaps, short_flaps.flaps);  // the same flaps (own streams)
  EXPECT_GT(long_flaps.job_failures, 0);
  EXPECT_LT(long_flaps.job_failures, long_flaps.flaps);  // not the ones on switch-to-switch cables
  EXPECT_LT(long_flaps.ettr.mean, short_flaps.ettr.mean);
}

TEST(CampaignStudy, SameInputsGiveIdenticalJson) {
  const CampaignOptions o{.days = 3, .seeds = 4, .sweep = false, .sweep_intervals_s = {}};
  const std::string a = to_json(run_campaign_study(small(), o));
  const std::string b = to_json(run_campaign_study(small(), o));
  EXPECT_EQ(a, b);
  for (const char* key : {"\"ettr\"", "\"ettr_p5\"", "\"ettr_p95\"", "\"lost_time_s\"", "\"failures\"", "\"timeline\"",
                          "\"checkpoint\"", "\"ettr_per_seed\""}) {
    EXPECT_NE(a.find(key), std::string::npos) << key;
  }
  Scenario other = small();
  other.seed = 4;
  EXPECT_NE(to_json(run_campaign_study(other, o)), a);
}

TEST(CampaignStudy, MoreFailuresLowerEttr) {
  const CampaignOptions o{.days = 5, .seeds = 8, .sweep = false, .sweep_intervals_s = {}};
  Scenario s = small();
  const CampaignReport base = run_campaign_study(s, o);
  s.failures.rate_scale *= 3;
  const CampaignReport worse = run_campaign_study(s, o);
  EXPECT_GT(worse.job_failures, 2 * base.job_failures);
  EXPECT_LT(worse.ettr.mean, base.ettr.mean);
  EXPECT_LE(base.ettr.p5, base.ettr.mean);
  EXPECT_GE(base.ettr.p95, base.ettr.mean);
}

// The default sweep is a grid of ratios sqrt(2) around Daly's interval plus Young's; the marks fall
// on their rows.
TEST(CampaignStudy, SweepMarksYoungDalyAndTheBest) {
  const CampaignOptions o{.days = 5, .seeds = 3, .sweep = true, .sweep_intervals_s = {}};
  const CampaignReport r = run_campaign_study(small(), o);
  ASSERT_EQ(r.sweep.size(), 10u);
  EXPECT_EQ(r.sweep[nearest_sweep_row(r, r.daly_interval_s)].interval_s, r.daly_interval_s);
  EXPECT_EQ(r.sweep[nearest_sweep_row(r, r.young_interval_s)].interval_s, r.young_interval_s);
  const std::string json = to_json(r);
  EXPECT_NE(json.find("\"best_interval_s\""), std::string::npos);
  EXPECT_NE(json.find("\"daly\""), std::string::npos);
  EXPECT_NE(to_text(r).find("daly"), std::string::npos);
}

TEST(CampaignStudy, BadInputsNameTheKey) {
  const CampaignOptions ok{.days = 1, .seeds = 1, .sweep = false, .sweep_intervals_s = {}};
  const auto key_of = [&](const char* assignment, CampaignOptions o) {
    return thrown_key([&] {
      Scenario s = small();
      if (assignment[0] != '\0') apply_override(s, assignment);
      run_campaign_study(s, o);
    });
  };
  EXPECT_EQ(key_of("failures.gpu_mtbf_h=-1", ok), "failures.gpu_mtbf_h");
  EXPECT_EQ(key_of("failures.link_flap_duration_s=0", ok), "failures.link_flap_duration_s");
  EXPECT_EQ(key_of("failures.rate_scale=-2", ok), "failures.rate_scale");
  EXPECT_EQ(key_of("failures.link_flap_durations=weibull", ok), "failures.link_flap_durations");
  EXPECT_EQ(key_of("recovery.heartbeat_misses=0", ok), "recovery.heartbeat_misses");
  EXPECT_EQ(key_of("recovery.spare_hosts=-1", ok), "recovery.spare_hosts");
  EXPECT_EQ(key_of("recovery.detection=pager", ok), "recovery.detection");
  EXPECT_EQ(key_of("checkpoint.interval_s=0", ok), "checkpoint.interval_s");
  EXPECT_EQ(key_of("checkpoint.load_s=-5", ok), "checkpoint.load_s");
  EXPECT_EQ(key_of("checkpoint.every_s=5", ok), "checkpoint.every_s");
  EXPECT_EQ(key_of("", CampaignOptions{.days = 0, .seeds = 1, .sweep = false, .sweep_intervals_s = {}}), "--days");
  EXPECT_EQ(key_of("", CampaignOptions{.days = 1, .seeds = 0, .sweep = false, .sweep_intervals_s = {}}), "--seeds");
  EXPECT_EQ(key_of("", CampaignOptions{.days = 1, .seeds = 1, .sweep = true, .sweep_intervals_s = {-3}}),
            "--intervals");
  EXPECT_EQ(
      key_of("failures.rate_scale=0", CampaignOptions{.days = 1, .seeds = 1, .sweep = true, .sweep_intervals_s = {}}),
      "--sweep-checkpoint-interval");
}

}  // namespace
}  // namespace megasim::scenarios
