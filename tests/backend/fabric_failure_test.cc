// Fabric under link failures: stall, detection, re-routing, recovery, stall timeouts.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "backend/sim/fabric.h"
#include "fabric_test_util.h"

namespace megasim::backend {
namespace {

using testing::Bed;
using testing::kLinkLatency;
using testing::kNicRate;
using testing::links_of_kind;
using testing::small_cluster;
using testing::transfer_ns;

constexpr double kBytes = 2.4e9;  // 100 ms at the NIC rate
constexpr sim::SimTime kFail = 25 * sim::kMillisecond;
constexpr sim::SimTime kDetect = 50 * sim::kMillisecond;  // FabricParams default

// A lone flow 0 -> 3 loses its ToR uplink at 25 ms. It stalls (rate 0) until the failure is
// detected 50 ms later, then moves to another uplink at the same NIC-limited rate. It has moved
// r * 25 ms before the failure and moves the rest after 75 ms: end = 75 ms + (B - r * 25 ms) / r
// = B / r + 50 ms, plus the 4-hop latency. The bytes split between old and new path accordingly.
TEST(FabricFailure, UplinkDownStallsThenReroutesAfterDetection) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  const FlowId id = bed.start(0, 3, kBytes, &done);
  bed.sim.run_until(0);
  const auto ups =
      links_of_kind(bed.topo, bed.fabric.flow_usage(id), topo::LinkKind::kTorAgg, topo::LinkDirection::kUp);
  ASSERT_EQ(ups.size(), 1u);
  const topo::LinkId failed = ups[0];
  bed.sim.schedule_at(kFail, [&] { bed.fabric.set_link_down(failed); });

  bed.sim.run_until(kFail + kDetect - 1);
  EXPECT_EQ(bed.fabric.flow_rate_bytes_per_s(id), 0.0);
  const double moved_before = kNicRate * sim::to_seconds(kFail);
  EXPECT_NEAR(bed.fabric.flow_remaining_bytes(id), kBytes - moved_before, 1.0);
  EXPECT_EQ(bed.fabric.link_capacity_bytes_per_s(failed), 0.0);

  bed.sim.run_until(kFail + kDetect);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNicRate);
  const auto new_ups =
      links_of_kind(bed.topo, bed.fabric.flow_usage(id), topo::LinkKind::kTorAgg, topo::LinkDirection::kUp);
  ASSERT_EQ(new_ups.size(), 1u);
  EXPECT_NE(new_ups[0], failed);

  bed.sim.run();
  const double expected =
      static_cast<double>(kFail + kDetect) + (kBytes - moved_before) / kNicRate * 1e9 + 4 * kLinkLatency;
  EXPECT_NEAR(static_cast<double>(done), expected, 2.0);
  EXPECT_NEAR(bed.fabric.link_bytes_carried(failed), moved_before, 1e-6 * kBytes);
  EXPECT_NEAR(bed.fabric.link_bytes_carried(new_ups[0]), kBytes - moved_before, 1e-6 * kBytes);
  EXPECT_NEAR(bed.fabric.link_bytes_carried(bed.topo.nic_up(topo::GpuId(0))), kBytes, 1e-6 * kBytes);
}

// A link that failed before the flow started (an iteration on a damaged fabric) is out of its ECMP
// group at once: the flow never crosses it and never stalls.
TEST(FabricFailure, LinkFailedBeforehandIsNeverUsed) {
  topo::LinkId chosen;
  {
    Bed probe(small_cluster(32));
    const FlowId id = probe.start(0, 3, kBytes);
    probe.sim.run_until(0);
    chosen =
        links_of_kind(probe.topo, probe.fabric.flow_usage(id), topo::LinkKind::kTorAgg, topo::LinkDirection::kUp).at(0);
  }
  Bed bed(small_cluster(32));
  bed.fabric.set_link_failed(chosen);
  sim::SimTime done = -1;
  const FlowId id = bed.start(0, 3, kBytes, &done);
  bed.sim.run_until(0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNicRate);
  for (const LinkUse& u : bed.fabric.flow_usage(id)) EXPECT_NE(u.link, chosen);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(kBytes, kNicRate) + 4 * kLinkLatency), 2.0);
  EXPECT_EQ(bed.fabric.link_capacity_bytes_per_s(chosen), 0.0);
}

// A NIC link has no alternative: the flow waits (stuck on its path) until the link is back, so it
// ends late by exactly the down time.
TEST(FabricFailure, NicLinkDownStallsUntilItIsUp) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  const FlowId id = bed.start(0, 3, kBytes, &done);
  const topo::LinkId nic = bed.topo.nic_up(topo::GpuId(0));
  const sim::SimTime up_at = kFail + 100 * sim::kMillisecond;  // past the detection delay
  bed.sim.schedule_at(kFail, [&] { bed.fabric.set_link_down(nic); });
  bed.sim.schedule_at(up_at, [&] { bed.fabric.set_link_up(nic); });
  bed.sim.run_until(up_at - 1);
  EXPECT_EQ(bed.fabric.flow_rate_bytes_per_s(id), 0.0);
  bed.sim.run();
  const double expected = static_cast<double>(transfer_ns(kBytes, kNicRate) + (up_at - kFail) + 4 * kLinkLatency);
  EXPECT_NEAR(static_cast<double>(done), expected, 2.0);
}

// A flow whose every uplink is removed from ECMP has no path: it stays stalled and takes the first
// uplink that comes back.
TEST(FabricFailure, EmptyEcmpGroupWaitsForALinkToComeBack) {
  Bed bed(small_cluster(32));
  const topo::NodeId tor = bed.topo.tor_of(topo::GpuId(0));
  const auto ups = bed.topo.up_links(tor);
  for (const topo::LinkId l : ups) bed.fabric.set_link_down(l);
  bed.sim.run_until(kDetect);  // all removed from the group
  sim::SimTime done = -1;
  const FlowId id = bed.start(0, 3, kBytes, &done);
  const sim::SimTime back = kDetect + 10 * sim::kMillisecond;
  bed.sim.schedule_at(back, [&] { bed.fabric.set_link_up(ups[2]); });
  bed.sim.run_until(back - 1);
  EXPECT_EQ(bed.fabric.flow_rate_bytes_per_s(id), 0.0);
  bed.sim.run_until(back);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNicRate);
  const auto used =
      links_of_kind(bed.topo, bed.fabric.flow_usage(id), topo::LinkKind::kTorAgg, topo::LinkDirection::kUp);
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0], ups[2]);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(back + transfer_ns(kBytes, kNicRate) + 4 * kLinkLatency),
              2.0);
}

struct FlapOutcome {
  sim::SimTime done = -1;
  std::vector<sim::SimTime> timeouts;
};

FlapOutcome run_flap(sim::SimTime flap) {
  FabricParams params;
  params.stall_timeout_ns = 100 * sim::kMillisecond;
  Bed bed(small_cluster(32), params);
  FlapOutcome out;
  bed.fabric.on_stall_timeout([&](FlowId) { out.timeouts.push_back(bed.sim.now()); });
  bed.start(0, 3, kBytes, &out.done);
  bed.fabric.schedule_cable_flap(bed.topo.nic_up(topo::GpuId(0)), kFail, flap);
  bed.sim.run();
  return out;
}

TEST(FabricFailure, FlapShorterThanStallTimeoutDoesNotFail) {
  const sim::SimTime flap = 30 * sim::kMillisecond;
  const FlapOutcome out = run_flap(flap);
  EXPECT_TRUE(out.timeouts.empty());
  EXPECT_NEAR(static_cast<double>(out.done),
              static_cast<double>(transfer_ns(kBytes, kNicRate) + flap + 4 * kLinkLatency), 2.0);
}

// Stalled from 25 ms; the 100 ms timeout fires once, at 125 ms; the flow still finishes after.
TEST(FabricFailure, FlapLongerThanStallTimeoutFiresTheCallbackOnce) {
  const sim::SimTime flap = 200 * sim::kMillisecond;
  const FlapOutcome out = run_flap(flap);
  ASSERT_EQ(out.timeouts.size(), 1u);
  EXPECT_EQ(out.timeouts[0], kFail + 100 * sim::kMillisecond);
  EXPECT_NEAR(static_cast<double>(out.done),
              static_cast<double>(transfer_ns(kBytes, kNicRate) + flap + 4 * kLinkLatency), 2.0);
}

// Down and up again within the detection delay: no re-route, the flow keeps its path.
TEST(FabricFailure, ShortOutageKeepsThePath) {
  Bed bed(small_cluster(32));
  const FlowId id = bed.start(0, 3, kBytes);
  bed.sim.run_until(0);
  const std::vector<LinkUse> before = bed.fabric.flow_usage(id);
  const auto ups = links_of_kind(bed.topo, before, topo::LinkKind::kTorAgg, topo::LinkDirection::kUp);
  bed.fabric.schedule_cable_flap(ups[0], kFail, kDetect / 2);
  bed.sim.run_until(kFail + kDetect + 1);
  const std::vector<LinkUse> after = bed.fabric.flow_usage(id);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].link, before[i].link);
}

std::map<topo::LinkId, double> uplink_weights(const Bed& bed, FlowId id) {
  std::map<topo::LinkId, double> out;
  for (const LinkUse& u : bed.fabric.flow_usage(id)) {
    const topo::Link& l = bed.topo.link(u.link);
    if (l.kind == topo::LinkKind::kTorAgg && l.direction == topo::LinkDirection::kUp) out[u.link] = u.weight;
  }
  return out;
}

// Resilient hashing: after detection only the QPs that crossed the failed uplink move; the flow's
// other QPs and the flows that never used the link keep their paths.
TEST(FabricFailure, ReroutingMovesOnlyTheQpsOnTheFailedLink) {
  FabricParams params;
  params.qps_per_connection = 4;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    params.ecmp.seed = seed;
    Bed bed(small_cluster(32), params);
    const FlowId a = bed.start(0, 3, kBytes);
    const FlowId b = bed.start(2, 5, kBytes);
    bed.sim.run_until(0);
    const auto before_a = uplink_weights(bed, a);
    const auto before_b = uplink_weights(bed, b);
    if (before_a.size() < 2) continue;  // all 4 QPs hashed onto one uplink: try another seed
    const topo::LinkId failed = before_a.begin()->first;
    bed.fabric.set_link_down(failed);
    bed.sim.run_until(kDetect);
    const auto after_a = uplink_weights(bed, a);
    EXPECT_EQ(after_a.count(failed), 0u);
    double total = 0;
    for (const auto& [link, w] : after_a) total += w;
    EXPECT_DOUBLE_EQ(total, 1.0);
    for (const auto& [link, w] : before_a) {
      if (link != failed) {
        EXPECT_GE(after_a.at(link), w);
      }
    }
    if (before_b.count(failed) == 0) {
      EXPECT_EQ(uplink_weights(bed, b), before_b);
    }
    return;
  }
  FAIL() << "no seed spread the QPs over two uplinks";
}

// A lone flow 0 -> 3 runs at the NIC rate, 24e9 B/s (fabric_test_util.h). 1e20 bytes take 4.17e9 s,
// inside the simulator's 2^62 ns (4.61e9 s); 1e21 bytes would take 4.17e10 s: the fabric refuses to
// schedule that completion (SimTimeError names the flow's bytes and rate) instead of wrapping it
// into the past or treating it as a stall.
TEST(FabricFailure, ACompletionPastTheTimeLimitIsRefused) {
  {
    Bed bed(small_cluster(32));
    sim::SimTime done = -1;
    bed.start(0, 3, 1e20, &done);
    bed.sim.run();
    EXPECT_EQ(done, transfer_ns(1e20, kNicRate) + 4 * kLinkLatency);
  }
  Bed bed(small_cluster(32));
  try {
    bed.start(0, 3, 1e21);  // a lone flow gets its rate at once
    bed.sim.run();
    FAIL() << "a flow of 4e10 s was scheduled";
  } catch (const sim::SimTimeError& e) {
    EXPECT_NE(std::string(e.what()).find("simulated time overflows: a flow's end (1e+21 bytes per lane at 2.4e+10 B/s"),
              std::string::npos)
        << e.what();
  }
}

// Every uplink of GPU 0's ToR failed: its flow to GPU 3 (the other rail's ToR) has no path. It stays
// stalled, and the fabric says which flow.
TEST(FabricFailure, AFlowWithoutAPathIsReportedStalled) {
  Bed bed(small_cluster(32));
  const topo::NodeId tor = bed.topo.tor_of(topo::GpuId(0));
  for (const topo::LinkId up : bed.topo.up_links(tor)) {
    bed.fabric.set_link_failed(up);
    bed.fabric.set_link_failed(bed.topo.link(up).reverse);
  }
  bed.start(0, 3, 1e6);
  bed.start(0, 2, 1e6);  // the same ToR: unaffected
  bed.sim.run();
  EXPECT_EQ(bed.fabric.active_flows(), 1u);
  EXPECT_EQ(bed.fabric.stalled_flows(), 1u);
  const std::optional<FlowLane> lane = bed.fabric.first_stalled_lane();
  ASSERT_TRUE(lane.has_value());
  EXPECT_EQ(lane->src, topo::GpuId(0));
  EXPECT_EQ(lane->dst, topo::GpuId(3));
}

TEST(FabricFailure, DestroyingTheFabricCancelsItsEvents) {
  sim::Simulator sim;
  const topo::Topology topo = topo::Topology::build(small_cluster(32));
  {
    FabricParams params;
    params.stall_timeout_ns = sim::kMillisecond;
    Fabric fabric(sim, topo, params);
    FlowSpec spec;
    spec.lanes = {{topo::GpuId(0), topo::GpuId(3), 0}};
    spec.bytes_per_lane = kBytes;
    fabric.start_flow(spec);
    spec.lanes = {{topo::GpuId(2), topo::GpuId(5), 0}};
    fabric.start_flow(spec);
    fabric.set_link_down(topo.nic_up(topo::GpuId(2)));  // detection and stall check pending
    fabric.schedule_cable_flap(topo.nic_up(topo::GpuId(0)), kFail, kFail);
    sim.run_until(1);
    EXPECT_GT(sim.events_pending(), 0u);
  }
  EXPECT_EQ(sim.events_pending(), 0u);
}

}  // namespace
}  // namespace megasim::backend
