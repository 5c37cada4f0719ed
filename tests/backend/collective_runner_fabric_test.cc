// Collectives on a multi-pod Clos: spraying reaches the NIC-limited busbw on a 1:1 fabric; with ECMP
// the time follows the most loaded link, computed here independently from topo::route_ecmp with the
// fabric's QP tuples; a link failure delays a collective but it finishes; same seed, same result.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "backend/sim/collective_runner.h"
#include "collective_runner_test_util.h"
#include "topology/routing.h"

namespace megasim::backend {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using namespace testing;  // NOLINT: test helpers

struct Clos {
  topo::ClusterParams cluster = small_clos();
  topo::Topology topo = topo::Topology::build(cluster);
  std::vector<topo::GpuId> ring = gpus_of_servers(topo, pod_hopping_servers());  // 64 GPUs, rail 0
  double n = 64;
};

// 1:1 Clos, spray: a rail-0 ToR has 8 ring members sending B each and 4 uplinks of 2B, so no switch
// link is tighter than the NICs: busbw (latencies zeroed) is the NIC rate B in GB/s.
TEST(CollectiveRunnerClos, SprayReachesNicLimitedBusBandwidth) {
  Clos s;
  FabricParams fabric;
  fabric.routing = Routing::kSpray;
  models::CollectiveParams params;
  params.base_latency_ns = params.net_step_latency_ns = params.nvlink_step_latency_ns = 0;
  const double bytes = 64 * kMiB;
  const CollectiveResult r =
      run_one(s.topo, fabric, params,
              make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, s.ring, params));
  const double b = nic_bytes_per_s(s.cluster, fabric) / 1e9;
  EXPECT_NEAR(r.busbw_gbytes_per_s, b, 1e-6 * b);
}

// The per-lane rate of a single flow whose lanes each split evenly over their QPs, each QP on its
// ECMP path: min over links of capacity / (lanes x 1/qps crossing it), from route_ecmp on the
// fabric's QP tuples.
double single_flow_ecmp_rate(const topo::Topology& topo, const FabricParams& f, const CollectiveJob& job,
                             std::uint32_t connection) {
  const topo::EcmpHasher hasher(f.ecmp);
  const topo::EcmpMembership members(topo.num_links());
  std::map<std::int32_t, double> load;
  const auto& edges = job.plan->phases.at(0).channels.at(0).edges;
  for (const models::CommEdge& e : edges) {
    const FlowLane lane{job.members[static_cast<std::size_t>(e.src)], job.members[static_cast<std::size_t>(e.dst)],
                        connection};
    for (int qp = 0; qp < f.qps_per_connection; ++qp) {
      const auto path =
          topo::route_ecmp(topo, lane.src, lane.dst, qp_tuple(topo, f.ecmp.seed, lane, qp), hasher, members);
      for (const topo::LinkId l : path.value().view()) load[l.value] += 1.0 / f.qps_per_connection;
    }
  }
  double rate = std::numeric_limits<double>::infinity();
  for (const auto& [link, lanes] : load) {
    const topo::Link& info = topo.link(topo::LinkId(link));
    const double eff = info.kind == topo::LinkKind::kNvLink ? f.nvlink_efficiency : f.network_efficiency;
    rate = std::min(rate, info.capacity_gbps * 1e9 / 8 * eff / lanes);
  }
  return rate;
}

// One channel: the ring is one flow whose rate is set by its most loaded link.
TEST(CollectiveRunnerClos, EcmpTimeFollowsTheMostLoadedLink) {
  Clos s;
  models::CollectiveParams params;
  params.channels = 1;
  const double bytes = 16 * kMiB;
  const CollectiveJob job =
      make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, s.ring, params);
  const double alpha = sim::to_seconds(params.base_latency_ns + 2 * 63 * params.net_step_latency_ns);
  double slowest_rate = std::numeric_limits<double>::infinity();
  for (const auto& [function, polarized] :
       {std::pair{topo::HashFunction::kCrc32, false}, std::pair{topo::HashFunction::kCrc32, true},
        std::pair{topo::HashFunction::kXor, false}}) {
    for (const auto& [seed, qps] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{3, 1}, std::pair{4, 4}}) {
      FabricParams fabric;
      fabric.ecmp = topo::EcmpConfig{function, polarized, static_cast<std::uint64_t>(seed)};
      fabric.qps_per_connection = qps;
      const double rate = single_flow_ecmp_rate(s.topo, fabric, job, fabric_connection(0, 0));
      EXPECT_LE(rate, nic_bytes_per_s(s.cluster, fabric) * (1 + 1e-12));
      slowest_rate = std::min(slowest_rate, rate);
      const CollectiveResult r = run_one(s.topo, fabric, params, job);  // run_concurrently: communicator 0
      const double want = alpha + 2 * (s.n - 1) / s.n * bytes / rate;
      EXPECT_NEAR(r.time_s, want, tolerance(want))
          << to_string(function) << " polarized " << polarized << " seed " << seed << " qps " << qps;
    }
  }
  // The case exercises collisions: some hash configuration loads a link beyond the NIC rate.
  EXPECT_LT(slowest_rate, nic_bytes_per_s(s.cluster, FabricParams{}));
}

// Spray, C = 1, S chosen so the flow is mid-way when a ToR uplink of member 0's ToR goes down at
// t_f: every lane sprays over that link, so the ring stalls until the failure is detected (D later),
// then sprays over the 3 others: the ToR's 8 lanes share 3 x 2B, 3B/4 each. So the end is
// t_f + D + (W - B (t_f - base)) / (3B/4) + 2(n-1) net steps, W = 2(n-1)/n*S.
TEST(CollectiveRunnerClos, LinkFailureDelaysButTheCollectiveFinishes) {
  Clos s;
  FabricParams fabric;
  fabric.routing = Routing::kSpray;
  models::CollectiveParams params;
  params.channels = 1;
  const double bytes = 256 * kMiB, b = nic_bytes_per_s(s.cluster, fabric);
  sim::Simulator sim;
  Fabric net(sim, s.topo, fabric);
  CollectiveRunner runner(sim, net, params);
  CollectiveResult result;
  bool finished = false;
  runner.start(make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, s.ring, params),
               [&](const CollectiveResult& r) { result = r, finished = true; });
  const sim::SimTime t_fail = params.base_latency_ns + 10 * sim::kMillisecond;
  const topo::LinkId uplink = s.topo.up_links(s.topo.tor_of(s.ring[0]))[0];
  sim.schedule_at(t_fail, [&] { net.set_link_down(uplink); });
  sim.run();
  ASSERT_TRUE(finished);
  const double w = 2 * (s.n - 1) / s.n * bytes;
  const double left = w - b * sim::to_seconds(t_fail - params.base_latency_ns);
  ASSERT_GT(left, 0);
  const double want =
      sim::to_seconds(t_fail + fabric.failure_detection_ns + 126 * params.net_step_latency_ns) + left / (0.75 * b);
  EXPECT_NEAR(result.time_s, want, tolerance(want));
}

TEST(CollectiveRunnerClos, SameSeedSameResults) {
  Clos s;
  models::CollectiveParams params;
  FabricParams fabric;
  fabric.ecmp.seed = 7;
  std::vector<CollectiveJob> jobs;
  for (int rail = 0; rail < 2; ++rail) {
    jobs.push_back(make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, 8 * kMiB,
                            gpus_of_servers(s.topo, pod_hopping_servers(), rail), params));
  }
  const auto a = run_concurrently(s.topo, fabric, params, jobs);
  const auto b = run_concurrently(s.topo, fabric, params, jobs);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].end_ns, b[i].end_ns);
    EXPECT_EQ(a[i].busbw_gbytes_per_s, b[i].busbw_gbytes_per_s);
  }
}

}  // namespace
}  // namespace megasim::backend
