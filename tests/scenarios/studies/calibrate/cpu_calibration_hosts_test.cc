// `megasim calibrate --backend cpu` over several hosts
// (scenarios/studies/calibrate/cpu_calibration.h): the plan's collectives measured between hosts
// give the inter-node bandwidth, those among a host's ranks the intra-node one, and the file
// carries [device] inter_node_gbytes_per_s, which the loader makes the cluster's NIC; on one host
// the report says no inter-node link was measured. The made-up links are those of
// cpu_calibration_test_util.h's DP fake with other rates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "backend/host_groups.h"
#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "scenarios/config/calibration_file.h"
#include "scenarios/config/device.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/calibrate/cpu_calibration.h"
#include "tests/scenarios/cpu_calibration_test_util.h"

namespace megasim::scenarios {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's names
using backend::HostLink;

// Two ranks of a host: 6 GB/s bus rate, 4 us; two hosts: 1.5 GB/s, 30 us; both reduce at
// kReductionRate. Point-to-point between hosts: 1.2 GB/s, 25 us.
constexpr double kIntraRate = 6e9;
constexpr double kIntraLatencyS = 4e-6;
constexpr double kInterRate = 1.5e9;
constexpr double kInterLatencyS = 30e-6;
constexpr double kInterP2pRate = 1.2e9;
constexpr double kInterP2pLatencyS = 25e-6;

// Every host group of these tests has two members: bus factors of dp_bus_factor.
double fake_host_s(HostLink link, models::CollectiveOp op, double bytes) {
  const bool intra = link == HostLink::kIntraNode;
  return bytes * dp_bus_factor(op) / (intra ? kIntraRate : kInterRate) + (intra ? kIntraLatencyS : kInterLatencyS) +
         (reduces(op) ? 0.5 * bytes / kReductionRate : 0.0);
}

backend::CpuProbe hosts_probe(int hosts, int ranks_per_host) {
  backend::CpuProbe p = fake_probe();
  p.links.ranks = hosts * ranks_per_host;
  p.links.hosts = hosts;
  p.links.ranks_per_host = ranks_per_host;
  if (ranks_per_host < 2) p.links.p2p_latency_s = p.links.p2p_bytes_per_s = 0;
  p.links.inter_p2p_latency_s = kInterP2pLatencyS;
  p.links.inter_p2p_bytes_per_s = kInterP2pRate;
  p.host_collective_seconds = [ranks_per_host](HostLink link, models::CollectiveOp op, double bytes) {
    EXPECT_TRUE(link == HostLink::kInterNode || ranks_per_host >= 2) << "no intra-node group with one rank per host";
    return fake_host_s(link, op, bytes);
  };
  return p;
}

// The plan-weighted bus bandwidth of the DP 2 plan's all-gathers over `link`, computed from the
// workload's tasks (one call each).
double copying_bandwidth(const models::Workload& w, HostLink link) {
  double bytes = 0;
  double seconds = 0;
  for (const models::StageProgram& stage : w.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kDpCollective || reduces(task.op)) continue;
      bytes += task.bytes * dp_bus_factor(task.op);
      seconds += fake_host_s(link, task.op, task.bytes);
    }
  }
  EXPECT_GT(seconds, 0);
  return bytes / seconds;
}

TEST(CpuCalibrationHosts, TwoHostsOfOneRankMeasureTheNetworkForBothLinks) {
  const Scenario s = load_scenario_text(tiny_scenario(true));
  const CpuCalibrationReport r = run_cpu_calibration(s, hosts_probe(2, 1));
  const double inter = copying_bandwidth(workload_of(s), HostLink::kInterNode);
  ASSERT_FALSE(r.inter_node.empty());
  EXPECT_TRUE(r.intra_node.empty());
  for (const CpuCollectiveMeasurement& c : r.inter_node) {
    EXPECT_EQ(c.members, 2);
    EXPECT_DOUBLE_EQ(c.measured_s, fake_host_s(HostLink::kInterNode, c.op, c.bytes));
  }
  EXPECT_NEAR(r.inter_node_bytes_per_s, inter, 1e-9 * inter);
  EXPECT_LT(r.inter_node_bytes_per_s, kInterRate);  // the 30 us latency costs something
  // One rank per host: no intra-node link; the inter-node figures stand for it.
  EXPECT_DOUBLE_EQ(r.intra_node_bytes_per_s, r.inter_node_bytes_per_s);
  EXPECT_EQ(r.collective.net_step_latency_ns, std::llround(kInterP2pLatencyS * 1e9));
  EXPECT_EQ(r.collective.nvlink_step_latency_ns, std::llround(kInterP2pLatencyS * 1e9));
  EXPECT_NE(to_text(r).find("one rank per host: the inter-node figure"), std::string::npos) << to_text(r);
}

TEST(CpuCalibrationHosts, TwoHostsOfTwoRanksMeasureEachLinkOnItsOwnGroups) {
  const Scenario s = load_scenario_text(tiny_scenario(true));
  const models::Workload w = workload_of(s);
  const CpuCalibrationReport r = run_cpu_calibration(s, hosts_probe(2, 2));
  ASSERT_EQ(r.intra_node.size(), r.inter_node.size());
  ASSERT_FALSE(r.intra_node.empty());
  for (std::size_t i = 0; i < r.intra_node.size(); ++i) {
    EXPECT_EQ(r.intra_node[i].op, r.inter_node[i].op);
    EXPECT_EQ(r.intra_node[i].bytes, r.inter_node[i].bytes);
    EXPECT_DOUBLE_EQ(r.intra_node[i].measured_s,
                     fake_host_s(HostLink::kIntraNode, r.intra_node[i].op, r.intra_node[i].bytes));
  }
  const double intra = copying_bandwidth(w, HostLink::kIntraNode);
  const double inter = copying_bandwidth(w, HostLink::kInterNode);
  EXPECT_NEAR(r.intra_node_bytes_per_s, intra, 1e-9 * intra);
  EXPECT_NEAR(r.inter_node_bytes_per_s, inter, 1e-9 * inter);
  EXPECT_NEAR(r.device.nvlink_total_gbytes_per_s, 2 * intra / 1e9, 1e-9);
  // The reduction rate from the intra-node reduce-scatters: near the fake's.
  EXPECT_NEAR(r.reduction_bytes_per_s, kReductionRate, 0.05 * kReductionRate);
  // Steps: the point-to-point latency of a host's ranks and of two hosts.
  EXPECT_EQ(r.collective.nvlink_step_latency_ns, std::llround(kP2pLatencyS * 1e9));
  EXPECT_EQ(r.collective.net_step_latency_ns, std::llround(kInterP2pLatencyS * 1e9));
  // The plan's own collectives are still measured and reported over its groups.
  EXPECT_FALSE(r.collectives.empty());
}

TEST(CpuCalibrationHosts, TheFileCarriesTheInterNodeRateAsTheNic) {
  const Scenario s = load_scenario_text(tiny_scenario(true));
  const CpuCalibrationReport r = run_cpu_calibration(s, hosts_probe(2, 2));
  const std::string toml = to_calibration_toml(r);
  const std::optional<CalibratedDevice> device = calibrated_device_text(toml, "two_hosts.toml");
  ASSERT_TRUE(device.has_value());
  EXPECT_NEAR(device->inter_node_gbytes_per_s, r.inter_node_bytes_per_s / 1e9, 5e-6 * r.inter_node_bytes_per_s / 1e9);
  EXPECT_NEAR(device->gpu.nvlink_total_gbytes_per_s / 2, r.intra_node_bytes_per_s / 1e9,
              5e-6 * r.intra_node_bytes_per_s / 1e9);
  models::ComputeCalibration compute = calibrated_device_defaults();
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  apply_calibration_text(toml, "two_hosts.toml", compute, fabric, &collective);
  EXPECT_DOUBLE_EQ(fabric.network_efficiency, 1.0);  // the NIC rate is the measured bus bandwidth
  EXPECT_EQ(collective.net_step_latency_ns, std::llround(kInterP2pLatencyS * 1e9));

  // A scenario on the calibrated device gets that rate as its NIC.
  const std::string path = ::testing::TempDir() + "/megasim_cpu_two_hosts.toml";
  { std::ofstream(path) << toml; }
  const Scenario calibrated = load_scenario_text(tiny_scenario(true, path));
  EXPECT_NEAR(effective_cluster(calibrated).nic_gbps, r.inter_node_bytes_per_s * 8 / 1e9,
              5e-6 * r.inter_node_bytes_per_s * 8 / 1e9);
  std::remove(path.c_str());

  const std::string text = to_text(r);
  EXPECT_NE(text.find("inter-node                 "), std::string::npos) << text;
  EXPECT_NE(text.find("over 2 hosts"), std::string::npos) << text;
  EXPECT_NE(to_json(r).find("\"inter_node_collectives\": ["), std::string::npos);
}

TEST(CpuCalibrationHosts, OneHostSaysNoInterNodeLinkWasMeasured) {
  const CpuCalibrationReport r = run_cpu_calibration(load_scenario_text(tiny_scenario(true)), fake_probe());
  EXPECT_DOUBLE_EQ(r.inter_node_bytes_per_s, 0);
  EXPECT_TRUE(r.inter_node.empty());
  EXPECT_NE(to_text(r).find("no inter-node link measured (the job ran on one host)"), std::string::npos) << to_text(r);
  const std::string toml = to_calibration_toml(r);
  EXPECT_NE(toml.find("# inter_node_gbytes_per_s: not measured (the job ran on one host"), std::string::npos) << toml;
  EXPECT_EQ(toml.find("\ninter_node_gbytes_per_s ="), std::string::npos) << toml;
  EXPECT_EQ(toml.find("network_efficiency"), std::string::npos) << toml;
  EXPECT_DOUBLE_EQ(calibrated_device_text(toml, "one_host.toml")->inter_node_gbytes_per_s, 0);
  EXPECT_NE(to_json(r).find("\"inter_node_bytes_per_s\": null"), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
