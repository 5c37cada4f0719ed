// The collective runner on ideal (uncontended) fabrics: completion times equal the alpha-beta
// formulas, derived here by hand: time = base + steps x step latency + bytes per edge / per-channel
// rate, where the C channels of a collective share each link they cross (rate B / C each).
#include "backend/sim/collective_runner.h"

#include <gtest/gtest.h>

#include "collective_runner_test_util.h"

namespace megasim::backend {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using namespace testing;  // NOLINT: test helpers

struct Ideal {
  topo::ClusterParams cluster = one_group_cluster();
  topo::Topology topo = topo::Topology::build(cluster);
  FabricParams fabric;
  models::CollectiveParams params;
  double base = sim::to_seconds(params.base_latency_ns);
  double net = sim::to_seconds(params.net_step_latency_ns);
  double nvl = sim::to_seconds(params.nvlink_step_latency_ns);
  double nic = nic_bytes_per_s(cluster, fabric);
  double nvlink = nvlink_bytes_per_s(cluster, fabric);

  CollectiveResult run(CollectiveOp op, CollectiveAlgorithm algo, double bytes, std::vector<topo::GpuId> gpus) {
    return run_one(topo, fabric, params, make_job(topo, op, algo, bytes, std::move(gpus), params));
  }
};

// n GPUs, one per server, under one ToR: each NIC link carries the C channels' edges, so a channel
// moves 2(n-1)/n*S/C at B/C: time = base + 2(n-1) net steps + 2(n-1)/n*S/B.
TEST(CollectiveRunner, FlatRingAllReduceAcrossServersIsAlphaBeta) {
  Ideal s;
  const double bytes = 64 * kMiB, n = 8;
  const CollectiveResult r =
      s.run(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, gpus_of_servers(s.topo, range(0, 8)));
  const double want = s.base + 2 * (n - 1) * s.net + 2 * (n - 1) / n * bytes / s.nic;
  EXPECT_NEAR(r.time_s, want, tolerance(want));
  EXPECT_EQ(r.start_ns, 0);
  EXPECT_NEAR(r.algbw_gbytes_per_s, bytes / want / 1e9, 1e-6 * r.algbw_gbytes_per_s);
  EXPECT_NEAR(r.busbw_gbytes_per_s, r.algbw_gbytes_per_s * 2 * (n - 1) / n, 1e-12 * r.busbw_gbytes_per_s);
}

TEST(CollectiveRunner, RingAllReduceInsideOneServerRunsOnNvlink) {
  Ideal s;
  const double bytes = 64 * kMiB, n = 8;
  const CollectiveResult r =
      s.run(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, gpus_of_servers(s.topo, {0}, 0));
  std::vector<topo::GpuId> gpus;
  for (std::int32_t g = 0; g < 8; ++g) gpus.emplace_back(g);
  const CollectiveResult all = s.run(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, gpus);
  EXPECT_EQ(r.time_s, sim::to_seconds(s.params.base_latency_ns));  // a group of one: latency only
  const double want = s.base + 2 * (n - 1) * s.nvl + 2 * (n - 1) / n * bytes / s.nvlink;
  EXPECT_NEAR(all.time_s, want, tolerance(want));
}

// 2 servers x 8 GPUs: NVLink reduce-scatter ((k-1)/k*S at the NVLink rate), a 2-member ring per
// rail all-reducing S/k (2(m-1)/m*S/k at the NIC rate), NVLink all-gather.
TEST(CollectiveRunner, HierarchicalAllReduceIsTheSumOfItsPhases) {
  Ideal s;
  const double bytes = 256 * kMiB, k = 8, m = 2;
  std::vector<topo::GpuId> gpus;
  for (std::int32_t g = 0; g < 16; ++g) gpus.emplace_back(g);
  const CollectiveResult r = s.run(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, gpus);
  const double intra = (k - 1) * s.nvl + (k - 1) / k * bytes / s.nvlink;
  const double rail = 2 * (m - 1) * s.net + 2 * (m - 1) / m * bytes / k / s.nic;
  const double want = s.base + 2 * intra + rail;
  EXPECT_NEAR(r.time_s, want, tolerance(want));
}

// Double binary tree over 4 servers (one GPU each), C = 1: tree 0 is 0 <- 2 <- {1, 3}, tree 1 its
// mirror 3 <- 1 <- {0, 2}. GPU 2's NIC carries 3 lanes of tree 0 and 1 of tree 1 (and GPU 1's the
// reverse), so both trees run at B/4 and each moves S/2: time = base + 2*depth net steps + 2S/B,
// depth = log2(4) = 2.
TEST(CollectiveRunner, TreeAllReduceOverFourServers) {
  Ideal s;
  s.params.channels = 1;
  const double bytes = 64 * kMiB;
  const CollectiveResult r =
      s.run(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, bytes, gpus_of_servers(s.topo, range(0, 4)));
  const double want = s.base + 4 * s.net + 2 * bytes / s.nic;
  EXPECT_NEAR(r.time_s, want, tolerance(want));
}

// Broadcast chain: member 0's NIC sends all C channels, S/C each at B/C: S/B. Send/recv likewise
// in one step. All-to-all over 4: each NIC sends 3 single-lane flows of S/4 at B/3: 3S/(4B).
TEST(CollectiveRunner, BroadcastSendRecvAllToAll) {
  Ideal s;
  const double bytes = 32 * kMiB;
  const auto four = gpus_of_servers(s.topo, range(0, 4));
  const CollectiveResult b = s.run(CollectiveOp::kBroadcast, CollectiveAlgorithm::kRing, bytes, four);
  EXPECT_NEAR(b.time_s, s.base + 3 * s.net + bytes / s.nic, tolerance(b.time_s));
  EXPECT_NEAR(b.busbw_gbytes_per_s, b.algbw_gbytes_per_s, 1e-12);
  const CollectiveResult p =
      s.run(CollectiveOp::kSendRecv, CollectiveAlgorithm::kRing, bytes, gpus_of_servers(s.topo, {2, 5}));
  EXPECT_NEAR(p.time_s, s.base + s.net + bytes / s.nic, tolerance(p.time_s));
  const CollectiveResult a = s.run(CollectiveOp::kAllToAll, CollectiveAlgorithm::kRing, bytes, four);
  EXPECT_NEAR(a.time_s, s.base + s.net + 3 * bytes / (4 * s.nic), tolerance(a.time_s));
}

// Two all-reduces on the same GPUs (different communicators) share every NIC: each takes twice the
// bandwidth time. Two on disjoint rails do not interact.
TEST(CollectiveRunner, ConcurrentCollectivesShareLinks) {
  Ideal s;
  const double bytes = 64 * kMiB, n = 8;
  const auto rail0 = gpus_of_servers(s.topo, range(0, 8), 0), rail1 = gpus_of_servers(s.topo, range(0, 8), 1);
  const auto job = [&](const std::vector<topo::GpuId>& g) {
    return make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, bytes, g, s.params);
  };
  const std::vector<CollectiveJob> same = {job(rail0), job(rail0)};
  const std::vector<CollectiveJob> apart = {job(rail0), job(rail1)};
  const double bw = 2 * (n - 1) / n * bytes / s.nic, alpha = s.base + 2 * (n - 1) * s.net;
  for (const CollectiveResult& r : run_concurrently(s.topo, s.fabric, s.params, same)) {
    EXPECT_NEAR(r.time_s, alpha + 2 * bw, tolerance(r.time_s));
  }
  for (const CollectiveResult& r : run_concurrently(s.topo, s.fabric, s.params, apart)) {
    EXPECT_NEAR(r.time_s, alpha + bw, tolerance(r.time_s));
  }
}

// Collectives started one after another from the completion callback reuse the runner's slots.
TEST(CollectiveRunner, SequentialCollectivesFromCallbacks) {
  Ideal s;
  sim::Simulator sim;
  Fabric fabric(sim, s.topo, s.fabric);
  CollectiveRunner runner(sim, fabric, s.params);
  const auto gpus = gpus_of_servers(s.topo, range(0, 8));
  std::vector<CollectiveResult> done;
  std::function<void(const CollectiveResult&)> next = [&](const CollectiveResult& r) {
    done.push_back(r);
    if (done.size() < 3) {
      runner.start(make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, kMiB, gpus, s.params), next);
    }
  };
  runner.start(make_job(s.topo, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, kMiB, gpus, s.params), next);
  sim.run();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(runner.active(), 0u);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(done[i].start_ns, done[i - 1].end_ns);
    EXPECT_EQ(done[i].end_ns - done[i].start_ns, done[0].end_ns - done[0].start_ns);
  }
}

TEST(CollectiveRunner, ServersOfAndConnections) {
  const topo::Topology topo = topo::Topology::build(one_group_cluster());
  const std::vector<topo::GpuId> gpus = {topo::GpuId(0), topo::GpuId(7), topo::GpuId(8), topo::GpuId(63)};
  EXPECT_EQ(servers_of(topo, gpus), (std::vector<std::int64_t>{0, 0, 1, 7}));
  EXPECT_EQ(fabric_connection(0, 3), 3u);
  EXPECT_EQ(fabric_connection(2, 3), 2u * models::kMaxConnectionsPerCollective + 3u);
}

}  // namespace
}  // namespace megasim::backend
