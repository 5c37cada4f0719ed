// Fabric routing (ECMP, spray, adaptive) checked against independent computations.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "backend/sim/fabric.h"
#include "fabric_test_util.h"

namespace megasim::backend {
namespace {

using testing::Bed;
using testing::equal_speed_cluster;
using testing::kLinkLatency;
using testing::kNicRate;
using testing::kNvLinkLatency;
using testing::kSwitchRate;
using testing::links_of_kind;
using testing::small_cluster;
using testing::transfer_ns;

FabricParams with_routing(Routing r, std::uint64_t seed = 0) {
  FabricParams p;
  p.routing = r;
  p.ecmp.seed = seed;
  return p;
}

// Spraying splits a lane equally over the 4 uplinks of the source ToR: each carries 1/4 of the
// bytes, and the flow still runs at the NIC rate.
TEST(FabricRouting, SprayPutsAQuarterOfTheBytesOnEachTorUplink) {
  Bed bed(small_cluster(32), with_routing(Routing::kSpray));
  sim::SimTime done = -1;
  bed.start(0, 3, 1e9, &done);
  bed.sim.run();
  const auto ups = bed.topo.up_links(bed.topo.tor_of(topo::GpuId(0)));
  ASSERT_EQ(ups.size(), 4u);
  for (const topo::LinkId l : ups) EXPECT_NEAR(bed.fabric.link_bytes_carried(l), 1e9 / 4, 1e-9 * 1e9);
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1e9, kNicRate) + 4 * kLinkLatency), 1.0);
}

// Across pods (three tiers) the ToR splits over 4 aggs and each agg over its 4 cores: 1/4 per ToR
// uplink and 1/16 per agg uplink, on 6 hops.
TEST(FabricRouting, SprayAcrossPodsSplitsAtBothTiers) {
  Bed bed(small_cluster(64), with_routing(Routing::kSpray));
  ASSERT_EQ(bed.topo.tiers(), 3);
  sim::SimTime done = -1;
  bed.start(0, 33, 1.6e9, &done);  // GPU 33: server 16, group 2, pod 1
  bed.sim.run();
  for (const topo::LinkId up : bed.topo.up_links(bed.topo.tor_of(topo::GpuId(0)))) {
    EXPECT_NEAR(bed.fabric.link_bytes_carried(up), 1.6e9 / 4, 1e-9 * 1.6e9);
    for (const topo::LinkId up2 : bed.topo.up_links(bed.topo.link(up).to)) {
      EXPECT_NEAR(bed.fabric.link_bytes_carried(up2), 1.6e9 / 16, 1e-9 * 1.6e9);
    }
  }
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(transfer_ns(1.6e9, kNicRate) + 6 * kLinkLatency), 1.0);
}

// Eight flows from the 8 GPUs of ToR (group 0, rail 0) to the 8 of ToR (group 0, rail 1). Flow i
// crosses its own NICs, the uplink k chosen by hashing, and agg k's down link to the destination
// ToR, which only flows on uplink k use. So the n_k flows on uplink k share 48e9 and each runs at
// min(24e9, 48e9 / n_k) until they all end together. n_k is computed here from route_ecmp with the
// flows' 5-tuples, independently of the fabric's bookkeeping.
TEST(FabricRouting, EcmpCompletionTimesFollowTheHashes) {
  int most_shared = 0;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const FabricParams params = with_routing(Routing::kEcmp, seed);
    Bed bed(small_cluster(32), params);
    const topo::EcmpHasher hasher(params.ecmp);
    const topo::EcmpMembership all(bed.topo.num_links());
    std::vector<topo::LinkId> uplink(8);
    std::map<topo::LinkId, int> count;
    std::vector<sim::SimTime> done(8, -1);
    for (int i = 0; i < 8; ++i) {
      const FlowLane lane{topo::GpuId(2 * i), topo::GpuId(2 * ((i + 1) % 8) + 1), 0};
      const auto path = topo::route_ecmp(bed.topo, lane.src, lane.dst, qp_tuple(bed.topo, seed, lane, 0), hasher, all);
      ASSERT_TRUE(path.has_value());
      uplink[static_cast<std::size_t>(i)] = path->links[1];
      ++count[path->links[1]];
      bed.start(lane.src.value, lane.dst.value, 1e9, &done[static_cast<std::size_t>(i)]);
    }
    bed.sim.run();
    for (const auto& [link, n] : count) most_shared = std::max(most_shared, n);
    for (std::size_t i = 0; i < 8; ++i) {
      const double rate = std::min(kNicRate, kSwitchRate / count[uplink[i]]);
      EXPECT_NEAR(static_cast<double>(done[i]), static_cast<double>(transfer_ns(1e9, rate) + 4 * kLinkLatency), 1.0)
          << "seed " << seed << " flow " << i << " sharing its uplink with " << count[uplink[i]] - 1;
    }
  }
  EXPECT_GE(most_shared, 3);  // some uplink is the bottleneck (below the NIC rate) in these cases
}

// Four simultaneous flows between the 4-NIC ToRs of equal_speed_cluster, where an uplink is as fast
// as a NIC. Adaptive routing gives them 4 distinct uplinks; ECMP hashing collides for some seed, and
// then the colliding flows share one uplink at half rate.
std::vector<topo::LinkId> uplinks_of_four_flows(Bed& bed, std::vector<sim::SimTime>& done) {
  std::vector<FlowId> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(bed.start(2 * i, 2 * ((i + 1) % 4) + 1, 1e9, &done[static_cast<std::size_t>(i)]));
  bed.sim.run_until(0);
  std::vector<topo::LinkId> ups;
  for (const FlowId id : ids) {
    const auto u =
        links_of_kind(bed.topo, bed.fabric.flow_usage(id), topo::LinkKind::kTorAgg, topo::LinkDirection::kUp);
    ups.push_back(u.at(0));
  }
  bed.sim.run();
  return ups;
}

TEST(FabricRouting, AdaptiveSpreadsFlowsOverDistinctUplinksWhereEcmpMayCollide) {
  std::vector<sim::SimTime> done(4, -1);
  Bed adaptive(equal_speed_cluster(16), with_routing(Routing::kAdaptive));
  const auto ups = uplinks_of_four_flows(adaptive, done);
  EXPECT_EQ(std::set<topo::LinkId>(ups.begin(), ups.end()).size(), 4u);
  for (const sim::SimTime t : done) {
    EXPECT_NEAR(static_cast<double>(t), static_cast<double>(transfer_ns(1e9, kNicRate) + 4 * kLinkLatency), 1.0);
  }
  // 4 flows on 4 uplinks avoid a collision with probability 4!/4^4 < 10% per seed.
  bool collided = false;
  for (std::uint64_t seed = 0; seed < 50 && !collided; ++seed) {
    Bed ecmp(equal_speed_cluster(16), with_routing(Routing::kEcmp, seed));
    const auto eups = uplinks_of_four_flows(ecmp, done);
    collided = std::set<topo::LinkId>(eups.begin(), eups.end()).size() < 4;
    if (collided) {
      EXPECT_GE(*std::max_element(done.begin(), done.end()), transfer_ns(1e9, kNicRate / 2));
    }
  }
  EXPECT_TRUE(collided);
}

// Several QPs per connection are hashed separately, each carrying 1/qps of the lane.
TEST(FabricRouting, QpsSplitALaneEvenly) {
  FabricParams params;
  params.qps_per_connection = 4;
  Bed bed(small_cluster(32), params);
  const FlowId id = bed.start(0, 3, 1e9);
  bed.sim.run_until(0);
  double up_weight = 0;
  for (const LinkUse& u : bed.fabric.flow_usage(id)) {
    const topo::Link& l = bed.topo.link(u.link);
    if (l.kind == topo::LinkKind::kNic) {
      EXPECT_DOUBLE_EQ(u.weight, 1.0);
    }
    if (l.kind == topo::LinkKind::kTorAgg && l.direction == topo::LinkDirection::kUp) {
      EXPECT_EQ(std::fmod(u.weight, 0.25), 0.0);
      up_weight += u.weight;
    }
  }
  EXPECT_DOUBLE_EQ(up_weight, 1.0);
}

// A RouteHint hands the cached route back for the next flow over the same lanes: the flow gets the
// same links, weights and rate as one routed through the cache lookup; a hint from before a link
// change (the cache was cleared) is ignored, and a hint handed back for other lanes is refused.
TEST(FabricRouting, RouteHintGivesTheRouteOfTheLookupAndGoesStaleWhenTheCacheClears) {
  Bed bed(small_cluster(64));
  const auto spec = [](RouteHint* hint) {
    FlowSpec s;
    s.lanes = {{topo::GpuId(0), topo::GpuId(33), 0}, {topo::GpuId(1), topo::GpuId(32), 0}};  // across pods
    s.bytes_per_lane = 1e9;
    s.route_hint = hint;
    return s;
  };
  RouteHint hint;
  const FlowId first = bed.fabric.start_flow(spec(&hint));
  ASSERT_NE(hint.route, nullptr);
  const std::vector<LinkUse> expected = bed.fabric.flow_usage(first);
  bed.sim.run();
  const RouteHint kept = hint;
  const FlowId hinted = bed.fabric.start_flow(spec(&hint));
  EXPECT_EQ(hint.route, kept.route);
  EXPECT_EQ(hint.generation, kept.generation);
  const FlowId looked_up = bed.fabric.start_flow(spec(nullptr));
  const auto same = [](const std::vector<LinkUse>& a, const std::vector<LinkUse>& b) {
    return std::ranges::equal(
        a, b, [](const LinkUse& x, const LinkUse& y) { return x.link == y.link && x.weight == y.weight; });
  };
  EXPECT_TRUE(same(bed.fabric.flow_usage(hinted), expected));
  EXPECT_TRUE(same(bed.fabric.flow_usage(looked_up), expected));
  bed.sim.run();
  EXPECT_EQ(bed.fabric.check_rates(), "");

  // A link change clears the cache: the old hint is stale and replaced by the new route's.
  const topo::LinkId unrelated = bed.topo.up_links(bed.topo.tor_of(topo::GpuId(30))).front();
  bed.fabric.set_link_speed_factor(unrelated, 0.5);
  const FlowId after = bed.fabric.start_flow(spec(&hint));
  EXPECT_NE(hint.generation, kept.generation);
  EXPECT_TRUE(same(bed.fabric.flow_usage(after), expected));
  bed.sim.run();

  FlowSpec other = spec(&hint);
  other.lanes.front().dst = topo::GpuId(35);
  EXPECT_DEATH(bed.fabric.start_flow(std::move(other)), "route hint handed back for other lanes");
}

// A flow uses its cached route's usage array in place while it is the route's only flow; a second
// flow on the same lanes gets a copy, and a cleared cache leaves the borrower its own copy.
// check_rates recounts the bookkeeping (fabric_sharing_check.cc) at each step with the flows live.
TEST(FabricRouting, FlowsOfOneRouteBorrowOrCopyItsUsagesAndKeepThemThroughACacheClear) {
  Bed bed(small_cluster(64));
  const auto spec = [] {
    FlowSpec s;
    s.lanes = {{topo::GpuId(0), topo::GpuId(33), 0}, {topo::GpuId(1), topo::GpuId(32), 0}};  // across pods
    s.bytes_per_lane = 1e9;
    return s;
  };
  const FlowId creator = bed.fabric.start_flow(spec());
  const std::vector<LinkUse> expected = bed.fabric.flow_usage(creator);
  bed.sim.run_until(bed.sim.now() + sim::kMillisecond);
  const double alone = bed.fabric.flow_rate_bytes_per_s(creator);
  bed.sim.run();
  const auto same = [&](FlowId id) {
    return std::ranges::equal(bed.fabric.flow_usage(id), expected, [](const LinkUse& x, const LinkUse& y) {
      return x.link == y.link && x.weight == y.weight;
    });
  };
  const FlowId borrower = bed.fabric.start_flow(spec());
  const FlowId copier = bed.fabric.start_flow(spec());
  bed.sim.run_until(bed.sim.now() + sim::kMillisecond);
  EXPECT_EQ(bed.fabric.check_rates(), "");
  EXPECT_TRUE(same(borrower));
  EXPECT_TRUE(same(copier));
  // They cross the same links with the same weights: max-min gives them the same rate, half the
  // rate the creator had alone.
  ASSERT_GT(alone, 0);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(borrower), alone / 2);
  EXPECT_DOUBLE_EQ(bed.fabric.flow_rate_bytes_per_s(copier), alone / 2);

  const topo::LinkId unrelated = bed.topo.up_links(bed.topo.tor_of(topo::GpuId(30))).front();
  bed.fabric.set_link_speed_factor(unrelated, 0.5);  // clears the route cache
  EXPECT_EQ(bed.fabric.check_rates(), "");
  EXPECT_TRUE(same(borrower));
  const FlowId after_clear = bed.fabric.start_flow(spec());
  bed.sim.run_until(bed.sim.now() + sim::kMillisecond);
  EXPECT_EQ(bed.fabric.check_rates(), "");
  EXPECT_TRUE(same(after_clear));
  bed.sim.run();
  EXPECT_EQ(bed.fabric.check_rates(), "");
  EXPECT_EQ(bed.fabric.active_flows(), 0u);
}

// Rail planes (cluster.rail_planes): GPU 1 (server 0, rail 1) sends to GPU 16 (server 8, rail 0) by
// way of GPU 0, whose NIC also carries GPU 0's own transfer to GPU 18 (server 9, rail 0): the two
// share that NIC, kNicRate / 2 each, and the forwarded one adds its two NVLink hops' latency. With
// the planes joined at the spines each leaves by its own NIC at kNicRate.
TEST(FabricRouting, RailPlanesForwardOverNvlinkOntoTheDestinationsRail) {
  const double bytes = 1e9;
  for (const bool planes : {true, false}) {
    topo::ClusterParams c = small_cluster(32);
    c.rail_planes = planes;
    Bed bed(c);
    sim::SimTime forwarded = -1, own = -1;
    bed.start(1, 16, bytes, &forwarded);
    bed.start(0, 18, bytes, &own, 1);
    bed.sim.run();
    EXPECT_EQ(bed.fabric.check_rates(), "");
    const double rate = planes ? kNicRate / 2 : kNicRate;
    const sim::SimTime hops = 4 * kLinkLatency;
    EXPECT_NEAR(static_cast<double>(own), static_cast<double>(transfer_ns(bytes, rate) + hops), 2.0) << planes;
    EXPECT_NEAR(static_cast<double>(forwarded),
                static_cast<double>(transfer_ns(bytes, rate) + hops + (planes ? 2 * kNvLinkLatency : 0)), 2.0)
        << planes;
  }
}

}  // namespace
}  // namespace megasim::backend
