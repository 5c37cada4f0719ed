// Fabric basics: transfer times from hand formulas, sharing, lanes, batching, parameters.
#include "backend/sim/fabric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "fabric_test_util.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

using testing::Bed;
using testing::kLinkLatency;
using testing::kNicRate;
using testing::kNvLinkLatency;
using testing::kNvLinkRate;
using testing::kSwitchRate;
using testing::small_cluster;
using testing::transfer_ns;

// GPU 0 (ToR rail 0) to GPU 3 (ToR rail 1), same pod: NIC -> ToR -> agg -> ToR -> NIC, limited by
// the NIC (24e9 B/s; the switch links run at 48e9). Time = bytes / 24e9 + 4 x 600 ns.
TEST(Fabric, LoneCrossTorFlowRunsAtNicRatePlusPathLatency) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  bed.start(0, 3, 1e9, &done);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1e9, kNicRate) + 4 * kLinkLatency), 1.0);
  ASSERT_EQ(bed.fabric.completed_flows().size(), 1u);
  EXPECT_EQ(bed.fabric.completed_flows()[0].end, done);
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
}

TEST(Fabric, AddPathLatencyOffCompletesAtTheLastByte) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  FlowSpec spec;
  spec.lanes = {{topo::GpuId(0), topo::GpuId(3), 0}};
  spec.bytes_per_lane = 1e9;
  spec.add_path_latency = false;
  spec.on_complete = [&](FlowId) { done = bed.sim.now(); };
  bed.fabric.start_flow(std::move(spec));
  bed.sim.run();
  EXPECT_EQ(done, transfer_ns(1e9, kNicRate));
}

// Two flows leaving the same NIC share its 24e9 B/s: 12e9 each, twice the lone time.
TEST(Fabric, TwoFlowsSharingANicLinkTakeTwiceAsLong) {
  Bed bed(small_cluster(32));
  sim::SimTime a = -1, b = -1;
  bed.start(0, 3, 1e9, &a);
  bed.start(0, 5, 1e9, &b);
  bed.sim.run_until(0);
  EXPECT_DOUBLE_EQ(bed.fabric.link_load_bytes_per_s(bed.topo.nic_up(topo::GpuId(0))), kNicRate);
  bed.sim.run();
  const double expected = static_cast<double>(transfer_ns(1e9, kNicRate / 2) + 4 * kLinkLatency);
  EXPECT_NEAR(static_cast<double>(a), expected, 1.0);
  EXPECT_NEAR(static_cast<double>(b), expected, 1.0);
}

// GPUs 0 and 1 share a server: GPU -> NVSwitch -> GPU at 240e9 B/s, 2 x 300 ns.
TEST(Fabric, SameServerFlowUsesNvLink) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  const FlowId id = bed.start(0, 1, 1e9, &done);
  bed.sim.run_until(0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNvLinkRate);
  const std::vector<LinkUse> usage = bed.fabric.flow_usage(id);
  ASSERT_EQ(usage.size(), 2u);
  for (const LinkUse& u : usage) EXPECT_EQ(bed.topo.link(u.link).kind, topo::LinkKind::kNvLink);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1e9, kNvLinkRate) + 2 * kNvLinkLatency), 1.0);
}

// The lanes of a flow move at one rate: an NVLink lane paired with a NIC lane runs at the NIC's
// rate, and the completion waits for the longer path (4 network hops, not 2 NVLink hops).
TEST(Fabric, LanesMoveAtTheSlowestLanesRate) {
  Bed bed(small_cluster(32));
  sim::SimTime done = -1;
  FlowSpec spec;
  spec.lanes = {{topo::GpuId(0), topo::GpuId(1), 0}, {topo::GpuId(2), topo::GpuId(5), 0}};
  spec.bytes_per_lane = 1e9;
  spec.on_complete = [&](FlowId) { done = bed.sim.now(); };
  const FlowId id = bed.fabric.start_flow(std::move(spec));
  bed.sim.run_until(0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNicRate);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1e9, kNicRate) + 4 * kLinkLatency), 1.0);
  EXPECT_EQ(bed.fabric.completed_flows()[0].lanes, 2);
}

// Two lanes of one flow leaving the same NIC put weight 2 on it: rate 24e9 / 2 per lane.
TEST(Fabric, LanesSharingALinkCountTwice) {
  Bed bed(small_cluster(32));
  FlowSpec spec;
  spec.lanes = {{topo::GpuId(0), topo::GpuId(3), 0}, {topo::GpuId(0), topo::GpuId(5), 0}};
  spec.bytes_per_lane = 1e9;
  const FlowId id = bed.fabric.start_flow(std::move(spec));
  bed.sim.run_until(0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(id), kNicRate / 2);
  double nic_weight = 0;
  for (const LinkUse& u : bed.fabric.flow_usage(id)) {
    if (u.link == bed.topo.nic_up(topo::GpuId(0))) nic_weight = u.weight;
  }
  EXPECT_DOUBLE_EQ(nic_weight, 2.0);
}

TEST(Fabric, FlowsStartedAtOneInstantCostOneRecomputation) {
  Bed bed(small_cluster(32));
  for (int i = 0; i < 8; ++i) bed.start(2 * i, 2 * i + 3, 1e6);
  EXPECT_EQ(bed.fabric.rate_recomputations(), 0u);
  bed.sim.run_until(0);
  EXPECT_EQ(bed.fabric.rate_recomputations(), 1u);
}

TEST(Fabric, SpeedFactorHalfDoublesALoneFlowsTime) {
  Bed bed(small_cluster(32));
  bed.fabric.set_link_speed_factor(bed.topo.nic_up(topo::GpuId(0)), 0.5);
  EXPECT_DOUBLE_EQ(bed.fabric.link_capacity_bytes_per_s(bed.topo.nic_up(topo::GpuId(0))), kNicRate / 2);
  sim::SimTime done = -1;
  bed.start(0, 3, 1e9, &done);
  bed.sim.run();
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1e9, kNicRate / 2) + 4 * kLinkLatency), 1.0);
}

// A link a flow crosses alone only caps it (fabric_sharing.cc keeps that cap): halving the NIC's
// speed in mid-flight halves the flow's rate at once, and restoring it restores the rate. A runs at r
// for 10 ms, r / 2 for 20 ms (the bytes of 10 ms at r), then r: it ends 10 ms later than alone.
TEST(Fabric, SpeedChangeOfALinkCrossedAloneMovesTheFlowsCap) {
  Bed bed(small_cluster(32));
  const topo::LinkId nic = bed.topo.nic_up(topo::GpuId(0));
  const double bytes = 1.2e9;  // 50 ms alone
  sim::SimTime done = -1;
  const FlowId a = bed.start(0, 3, bytes, &done);
  bed.sim.schedule_at(10 * sim::kMillisecond, [&] { bed.fabric.set_link_speed_factor(nic, 0.5); });
  bed.sim.schedule_at(30 * sim::kMillisecond, [&] { bed.fabric.set_link_speed_factor(nic, 1.0); });
  std::vector<std::string> violations;
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) violations.push_back(v);
  });
  bed.sim.run_until(20 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(a), kNicRate / 2);
  bed.sim.run();
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_NEAR(static_cast<double>(done),
              static_cast<double>(transfer_ns(bytes, kNicRate) + 10 * sim::kMillisecond + 4 * kLinkLatency), 2.0);
}

// Two flows alone together on their links (same lanes, two connections: a ring's two channels) form
// a pair whose links bound only the sum of their rates (fabric_sharing.cc). Each gets r / 2; halving
// the NIC in mid-flight gives each r / 4; a third flow on the NIC breaks the pair (r / 6 each at the
// halved speed) and its end re-forms it. The rates are checked against max-min at every change.
TEST(Fabric, PairedFlowsFollowTheirLinksSpeedAndAThirdFlow) {
  Bed bed(small_cluster(32));
  const topo::LinkId nic = bed.topo.nic_up(topo::GpuId(0));
  std::vector<std::string> violations;
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) violations.push_back(v);
  });
  const FlowId a = bed.start(0, 3, 10e9, nullptr, 0);
  const FlowId b = bed.start(0, 3, 10e9, nullptr, 1);
  bed.sim.run_until(1 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(a), kNicRate / 2);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(b), kNicRate / 2);
  bed.fabric.set_link_speed_factor(nic, 0.5);
  bed.sim.run_until(2 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(a), kNicRate / 4);
  const FlowId c = bed.start(0, 5, 1e6);  // 1 MB at r / 6: about 0.25 ms
  bed.sim.run_until(2 * sim::kMillisecond + 1);
  EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(a), kNicRate / 6, 1e-6 * kNicRate);
  EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(c), kNicRate / 6, 1e-6 * kNicRate);
  bed.sim.run_until(3 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(b), kNicRate / 4);
  bed.fabric.set_link_speed_factor(nic, 1.0);
  bed.sim.run_until(4 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(b), kNicRate / 2);
  bed.sim.run();
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
}

// A switch link binds its flows only when their loads at their fastest can exceed it
// (fabric_sharing.cc): two transfers, each held to its 200 Gb/s NIC, fill a 400 Gb/s ToR uplink
// without being slowed by it, and a third makes it bind: each gets a third of the uplink. When the
// third's NIC goes down (its bound falls to 0) the uplink stops binding the other two, which run at
// their NIC's rate again; when it comes back (before the failure is detected) the uplink binds all
// three again. The rates are checked against max-min, and the classes against a recount, at every
// change.
// A flow on a changed link whose bottleneck is elsewhere keeps its rate, and the flow that lost its
// bottleneck there takes the capacity left (the region re-solve starts from that one alone,
// fabric_local_solve.cc). All transfers stay under ToR (group 0, rail 0): NIC up, NIC down.
// Water-filling by hand: R (lanes 0->2 and 4->6) shares NIC-up(0) with Z1 and Z2 and NIC-up(4)
// with P and P2; both cables fill at kNicRate/3, so all five run at kNicRate/3. When P ends,
// NIC-up(0) still holds R at kNicRate/3, and P2 takes the rest of NIC-up(4): 2/3 kNicRate.
TEST(Fabric, AFlowHeldElsewhereKeepsItsRateWhenItsOtherLinkFrees) {
  Bed bed(small_cluster(32));
  std::vector<std::string> violations;
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) violations.push_back(v);
  });
  FlowSpec ring;
  ring.lanes = {{topo::GpuId(0), topo::GpuId(2), 0}, {topo::GpuId(4), topo::GpuId(6), 0}};
  ring.bytes_per_lane = 1e12;
  const FlowId r = bed.fabric.start_flow(ring);
  const FlowId z1 = bed.start(0, 8, 1e12);
  const FlowId z2 = bed.start(0, 10, 1e12);
  const double third = kNicRate / 3;
  sim::SimTime p_done = -1;
  const FlowId p = bed.start(4, 12, third * 1e-3, &p_done);  // one millisecond at a third of a NIC
  const FlowId p2 = bed.start(4, 14, 1e12);
  bed.sim.run_until(sim::kMillisecond / 2);
  for (const FlowId id : {r, z1, z2, p, p2}) EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(id), third, 1e-9 * kNicRate);
  bed.sim.run_until(2 * sim::kMillisecond);
  EXPECT_NEAR(static_cast<double>(p_done), static_cast<double>(sim::kMillisecond + 2 * kLinkLatency), 2.0);
  for (const FlowId id : {r, z1, z2}) EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(id), third, 1e-9 * kNicRate);
  EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(p2), kNicRate - third, 1e-9 * kNicRate);
  EXPECT_TRUE(violations.empty()) << violations.front();
}

TEST(Fabric, SwitchLinkBindsOnlyWhenItsFlowsCanExceedIt) {
  // Three one-lane transfers from distinct NICs of ToR (group 0, rail 0) to distinct NICs of ToR
  // (group 1, rail 0) that ECMP hashes onto one uplink, found by routing candidates on a scratch bed.
  struct Lane {
    int src, dst;
    std::uint32_t connection;
  };
  std::vector<Lane> chosen;
  {
    Bed probe(small_cluster(32));
    std::map<std::int32_t, std::vector<Lane>> by_uplink;
    for (int src = 0; src <= 14; src += 2) {
      for (std::uint32_t connection = 0; connection < 4; ++connection) {
        const int dst = 16 + src;
        const FlowId id = probe.start(src, dst, 1e6, nullptr, connection);
        for (const LinkUse& u : probe.fabric.flow_usage(id)) {
          const topo::Link& link = probe.topo.link(u.link);
          if (link.kind == topo::LinkKind::kTorAgg && link.direction == topo::LinkDirection::kUp) {
            std::vector<Lane>& lanes = by_uplink[u.link.value];
            if (std::ranges::none_of(lanes, [&](const Lane& l) { return l.src == src; }))
              lanes.push_back({src, dst, connection});
          }
        }
      }
    }
    for (const auto& [uplink, lanes] : by_uplink) {
      if (lanes.size() >= 3) {
        chosen.assign(lanes.begin(), lanes.begin() + 3);
        break;
      }
    }
  }
  ASSERT_EQ(chosen.size(), 3u) << "no ToR uplink with three candidate transfers";
  FabricParams params;
  params.failure_detection_ns = 100 * sim::kMillisecond;  // the NIC is back before any re-route
  Bed bed(small_cluster(32), params);
  std::vector<std::string> violations;
  bed.fabric.on_rates_recomputed([&] {
    if (std::string v = bed.fabric.check_rates(); !v.empty()) violations.push_back(v);
  });
  const auto start = [&](const Lane& l) { return bed.start(l.src, l.dst, 10e9, nullptr, l.connection); };
  const FlowId a = start(chosen[0]);
  const FlowId b = start(chosen[1]);
  bed.sim.run_until(1 * sim::kMillisecond);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(a), kNicRate);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(b), kNicRate);
  const FlowId c = start(chosen[2]);
  bed.sim.run_until(2 * sim::kMillisecond);
  for (const FlowId id : {a, b, c}) EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(id), kSwitchRate / 3, 1e-6 * kNicRate);
  const topo::LinkId c_nic = bed.topo.nic_up(topo::GpuId(chosen[2].src));
  bed.fabric.set_link_down(c_nic);
  bed.sim.run_until(3 * sim::kMillisecond);
  EXPECT_EQ(bed.fabric.flow_rate_bytes_per_s(c), 0.0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(a), kNicRate);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(b), kNicRate);
  bed.fabric.set_link_up(c_nic);
  bed.sim.run_until(4 * sim::kMillisecond);
  for (const FlowId id : {a, b, c}) EXPECT_NEAR(bed.fabric.flow_rate_bytes_per_s(id), kSwitchRate / 3, 1e-6 * kNicRate);
  bed.sim.run();
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
}

// Progress is settled when rates change: B joins A's NIC at t_b = 25 ms, A has moved r * t_b
// (half its bytes) and moves the rest at r / 2, ending at t_b + (bytes - r t_b) / (r / 2) = 75 ms.
TEST(Fabric, RateChangeSettlesProgress) {
  Bed bed(small_cluster(32));
  const double bytes = 1.2e9;  // 50 ms alone
  const sim::SimTime t_b = 25 * sim::kMillisecond;
  sim::SimTime a = -1;
  const FlowId fa = bed.start(0, 3, bytes, &a);
  bed.sim.schedule_at(t_b, [&] { bed.start(0, 5, 10e9); });
  bed.sim.run_until(t_b + 1);
  const double left_at_t_b = bytes - kNicRate * sim::to_seconds(t_b);
  EXPECT_NEAR(bed.fabric.flow_remaining_bytes(fa), left_at_t_b - kNicRate / 2 * 1e-9, 1.0);
  bed.sim.run();
  const double expected = static_cast<double>(t_b) + left_at_t_b / (kNicRate / 2) * 1e9 + 4 * kLinkLatency;
  EXPECT_NEAR(static_cast<double>(a), expected, 2.0);
}

TEST(FabricParams, ParseAndPrintRouting) {
  for (Routing r : {Routing::kEcmp, Routing::kSpray, Routing::kAdaptive}) {
    EXPECT_EQ(parse_routing(to_string(r), "fabric.routing"), r);
  }
  try {
    parse_routing("random", "fabric.routing");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "fabric.routing");
    EXPECT_EQ(e.value(), "random");
  }
}

void expect_invalid(const FabricParams& p, const std::string& key) {
  try {
    validate(p);
    FAIL() << "expected ConfigError for " << key;
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), key);
  }
}

TEST(FabricParams, InvalidValuesNameTheirKey) {
  FabricParams p;
  EXPECT_NO_THROW(validate(p));
  p.qps_per_connection = 0;
  expect_invalid(p, "fabric.qps_per_connection");
  for (double bad : {0.0, -0.1, 1.5}) {
    p = {};
    p.nvlink_efficiency = bad;
    expect_invalid(p, "fabric.nvlink_efficiency");
    p = {};
    p.network_efficiency = bad;
    expect_invalid(p, "fabric.network_efficiency");
  }
  p = {};
  p.failure_detection_ns = -1;
  expect_invalid(p, "fabric.failure_detection_s");
  p = {};
  p.stall_timeout_ns = -1;
  expect_invalid(p, "fabric.stall_timeout_s");
  p = {};
  p.region_patience_rounds = -1;
  expect_invalid(p, "fabric.region_patience_rounds");
  p = {};
  p.routing = static_cast<Routing>(7);
  expect_invalid(p, "fabric.routing");
}

TEST(FabricParams, ConstructorValidates) {
  sim::Simulator sim;
  const topo::Topology topo = topo::Topology::build(small_cluster(32));
  FabricParams p;
  p.qps_per_connection = 0;
  EXPECT_THROW(Fabric(sim, topo, p), sim::ConfigError);
}

TEST(FabricParams, SpeedFactorOutsideZeroOneIsRejected) {
  Bed bed(small_cluster(32));
  for (double bad : {0.0, -1.0, 1.01}) {
    try {
      bed.fabric.set_link_speed_factor(topo::LinkId(0), bad);
      FAIL() << "expected ConfigError";
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "fabric.link_speed_factor");
    }
  }
}

}  // namespace
}  // namespace megasim::backend
