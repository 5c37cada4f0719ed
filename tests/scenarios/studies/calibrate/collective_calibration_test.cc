// The collective part of `megasim calibrate --backend cuda --gpus N` without a GPU
// (scenarios/studies/calibrate/collective_calibration.h): times generated here from a known latency
// model and bus bandwidth per link must give them back, the file must load to the fitted fields,
// and links the job lacks must keep their defaults.
#include "scenarios/studies/calibrate/collective_calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/sim/fabric.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/config/calibration_file.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/studies/calibrate/calibrate_study.h"
#include "sim/error.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using backend::HostLink;
using models::CollectiveOp;
using testing::thrown_key;

constexpr double kKiB = 1024;
constexpr double kGiB = 1024 * 1024 * kKiB;

// The made-up cluster: a call costs base + steps x step latency (the model's flat ring), plus its
// bus bytes at the link's bus bandwidth.
constexpr double kBaseS = 6e-6;
constexpr double kNvlinkStepS = 0.5e-6;
constexpr double kNetStepS = 3e-6;
constexpr double kIntraBusRate = 360e9;  // of NVLink's 450 GB/s each way on an H200
constexpr double kInterBusRate = 22e9;   // of a 200 Gb/s NIC's 25 GB/s
constexpr double kNvlinkLine = 450e9;
constexpr double kNicLine = 25e9;

// Written out here rather than taken from models/: all-reduce 2(n-1)/n and 2(n-1) steps;
// all-gather and reduce-scatter (n-1)/n and n-1 steps; the ping-pong 1 and 1.
double factor(CollectiveOp op, double n) {
  if (op == CollectiveOp::kAllReduce) return 2 * (n - 1) / n;
  if (op == CollectiveOp::kSendRecv) return 1;
  return (n - 1) / n;
}
double steps(CollectiveOp op, double n) {
  if (op == CollectiveOp::kAllReduce) return 2 * (n - 1);
  if (op == CollectiveOp::kSendRecv) return 1;
  return n - 1;
}

double model_seconds(HostLink link, CollectiveOp op, double n, double bytes) {
  const double step = link == HostLink::kIntraNode ? kNvlinkStepS : kNetStepS;
  const double rate = link == HostLink::kIntraNode ? kIntraBusRate : kInterBusRate;
  return kBaseS + steps(op, n) * step + bytes * factor(op, n) / rate;
}

constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                                 CollectiveOp::kSendRecv};

// What the probe measures on `hosts` x `per_host` GPUs: 8 KiB to 1 GiB by x4 (the last is the cap).
backend::LinkMeasurements measured(int hosts, int per_host) {
  backend::LinkMeasurements m;
  m.ranks = hosts * per_host;
  m.hosts = hosts;
  m.ranks_per_host = per_host;
  m.repetitions = 20;
  for (const HostLink link : {HostLink::kIntraNode, HostLink::kInterNode}) {
    const int n = link == HostLink::kIntraNode ? per_host : hosts;
    if (n < 2) continue;
    for (const CollectiveOp op : kOps) {
      const int ranks = op == CollectiveOp::kSendRecv ? 2 : n;
      std::vector<double> sizes;
      for (double b = 8 * kKiB; b < kGiB; b *= 4) sizes.push_back(b);
      sizes.push_back(kGiB);
      for (const double b : sizes) m.points.push_back({link, op, ranks, b, model_seconds(link, op, ranks, b)});
    }
  }
  return m;
}

// The mean over the three collectives of busbw at 1 GiB (the latency included) over the line rate.
double expected_efficiency(HostLink link, int n, double line) {
  double sum = 0;
  for (const CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    sum += kGiB * factor(op, n) / model_seconds(link, op, n, kGiB);
  }
  return sum / 3 / line;
}

TEST(CollectiveCalibration, LineFitRecoversLatencyAndBandwidth) {
  // 8 ranks' all-reduce: latency 6 + 14 x 0.5 = 13 us, bus rate 360 GB/s.
  std::vector<backend::LinkPoint> points;
  for (const double b : {8 * kKiB, 32 * kKiB, 128 * kKiB, 512 * kKiB}) {
    points.push_back({HostLink::kIntraNode, CollectiveOp::kAllReduce, 8, b,
                      model_seconds(HostLink::kIntraNode, CollectiveOp::kAllReduce, 8, b)});
  }
  const LineFit fit = fit_line(points);
  EXPECT_NEAR(fit.latency_s, 13e-6, 1e-15);
  EXPECT_NEAR(fit.bus_bytes_per_s, kIntraBusRate, 1e-6 * kIntraBusRate);
  // The busbw arithmetic of a point: bus bytes = size x 2(n-1)/n.
  EXPECT_DOUBLE_EQ(points[0].bus_bytes(), 8 * kKiB * 1.75);
  EXPECT_DOUBLE_EQ(points[0].busbw_bytes_per_s(), points[0].algbw_bytes_per_s() * 1.75);
}

TEST(CollectiveCalibration, LineFitNeedsTwoSizesAndPositiveTimes) {
  const backend::LinkPoint one{HostLink::kIntraNode, CollectiveOp::kAllGather, 4, 8 * kKiB, 1e-5};
  EXPECT_EQ(thrown_key([&] { fit_line(std::vector<backend::LinkPoint>{one}); }), "calibrate.collectives");
  EXPECT_EQ(thrown_key([&] { fit_line(std::vector<backend::LinkPoint>{one, one}); }), "calibrate.collectives");
  backend::LinkPoint zero = one;
  zero.bytes = 32 * kKiB;
  zero.seconds = 0;
  EXPECT_EQ(thrown_key([&] { fit_line(std::vector<backend::LinkPoint>{one, zero}); }), "calibrate.collectives");
}

TEST(CollectiveCalibration, RingStepsAreTheModelsFlatRing) {
  EXPECT_EQ(ring_steps(CollectiveOp::kAllReduce, 8), 14);
  EXPECT_EQ(ring_steps(CollectiveOp::kAllGather, 8), 7);
  EXPECT_EQ(ring_steps(CollectiveOp::kReduceScatter, 4), 3);
  EXPECT_EQ(ring_steps(CollectiveOp::kSendRecv, 2), 1);
}

TEST(CollectiveCalibration, TwoHostsOfEightGpusGiveBackTheModel) {
  const CollectiveCalibration c = calibrate_collectives(measured(2, 8), kNvlinkLine, kNicLine);
  ASSERT_EQ(c.fits.size(), 8u);  // 4 ops x 2 links
  for (const LinkOpFit& f : c.fits) {
    const double n = static_cast<double>(f.ranks);
    EXPECT_EQ(f.ranks, f.op == CollectiveOp::kSendRecv ? 2 : (f.link == HostLink::kIntraNode ? 8 : 2));
    EXPECT_EQ(f.steps, static_cast<std::int64_t>(steps(f.op, n)));
    const double step = f.link == HostLink::kIntraNode ? kNvlinkStepS : kNetStepS;
    EXPECT_NEAR(f.small.latency_s, kBaseS + steps(f.op, n) * step, 1e-14)
        << to_string(f.link) << " " << to_string(f.op);
    EXPECT_DOUBLE_EQ(f.largest_bytes, kGiB);
  }
  // Base 6 us, NVLink step 0.5 us, network step 3 us, from the intercepts.
  EXPECT_NEAR(c.latencies.base_s, kBaseS, 1e-12);
  ASSERT_TRUE(c.latencies.nvlink_step_s && c.latencies.net_step_s);
  EXPECT_NEAR(*c.latencies.nvlink_step_s, kNvlinkStepS, 1e-12);
  EXPECT_NEAR(*c.latencies.net_step_s, kNetStepS, 1e-12);
  EXPECT_EQ(c.base_latency_ns, 6000);
  EXPECT_EQ(c.nvlink_step_latency_ns, 500);
  EXPECT_EQ(c.net_step_latency_ns, 3000);
  // Efficiencies: just under 360/450 = 0.8 and 22/25 = 0.88 (the latency at 1 GiB).
  ASSERT_TRUE(c.nvlink_efficiency && c.network_efficiency);
  EXPECT_NEAR(*c.nvlink_efficiency, expected_efficiency(HostLink::kIntraNode, 8, kNvlinkLine), 1e-12);
  EXPECT_NEAR(*c.network_efficiency, expected_efficiency(HostLink::kInterNode, 2, kNicLine), 1e-12);
  EXPECT_NEAR(*c.nvlink_efficiency, 0.8, 5e-3);
  EXPECT_NEAR(*c.network_efficiency, 0.88, 5e-3);
  EXPECT_FALSE(c.nvlink_capped);
}

TEST(CollectiveCalibration, OneHostLeavesTheNetworkAtItsDefaults) {
  const CollectiveCalibration c = calibrate_collectives(measured(1, 4), kNvlinkLine, kNicLine);
  EXPECT_EQ(c.fits.size(), 4u);
  EXPECT_TRUE(c.nvlink_efficiency.has_value());
  EXPECT_FALSE(c.network_efficiency.has_value());
  EXPECT_FALSE(c.inter_node_busbw_bytes_per_s.has_value());
  EXPECT_FALSE(c.net_step_latency_ns.has_value());
  EXPECT_EQ(c.nvlink_step_latency_ns, 500);
  EXPECT_EQ(c.base_latency_ns, 6000);

  const std::string toml = to_calibration_toml(c);
  EXPECT_NE(toml.find("inter-node: not measured (the job ran on one host)"), std::string::npos) << toml;
  EXPECT_EQ(toml.find("network_efficiency ="), std::string::npos) << toml;
  EXPECT_EQ(toml.find("net_step_latency_us ="), std::string::npos) << toml;
  // Loaded over defaults: what was not measured stays as it was.
  models::ComputeCalibration compute = models::default_compute_calibration(models::find_gpu("H200"));
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  apply_calibration_text(toml, "one host", compute, fabric, &collective);
  EXPECT_DOUBLE_EQ(fabric.network_efficiency, backend::FabricParams{}.network_efficiency);
  EXPECT_EQ(collective.net_step_latency_ns, models::CollectiveParams{}.net_step_latency_ns);
  EXPECT_EQ(collective.nvlink_step_latency_ns, 500);
  EXPECT_NEAR(fabric.nvlink_efficiency, *c.nvlink_efficiency, 5e-5);

  const std::string text = to_text(c);
  EXPECT_NE(text.find("network_efficiency   not measured (the job ran on one host)"), std::string::npos) << text;
}

TEST(CollectiveCalibration, OneGpuPerHostMeasuresOnlyTheNetwork) {
  const CollectiveCalibration c = calibrate_collectives(measured(4, 1), kNvlinkLine, kNicLine);
  EXPECT_FALSE(c.nvlink_efficiency.has_value());
  EXPECT_FALSE(c.nvlink_step_latency_ns.has_value());
  ASSERT_TRUE(c.network_efficiency.has_value());
  EXPECT_NEAR(*c.network_efficiency, expected_efficiency(HostLink::kInterNode, 4, kNicLine), 1e-12);
  EXPECT_EQ(c.net_step_latency_ns, 3000);
  EXPECT_NE(to_calibration_toml(c).find("intra-node: not measured (one GPU per host)"), std::string::npos);
}

TEST(CollectiveCalibration, TheFileLoadsBackToTheFittedFields) {
  const CollectiveCalibration c = calibrate_collectives(measured(2, 4), kNvlinkLine, kNicLine);
  models::ComputeCalibration compute = models::default_compute_calibration(models::find_gpu("H200"));
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  apply_calibration_text(to_calibration_toml(c), "collectives", compute, fabric, &collective);
  EXPECT_NEAR(fabric.nvlink_efficiency, *c.nvlink_efficiency, 5e-5);
  EXPECT_NEAR(fabric.network_efficiency, *c.network_efficiency, 5e-5);
  EXPECT_EQ(collective.base_latency_ns, c.base_latency_ns);
  EXPECT_EQ(collective.nvlink_step_latency_ns, *c.nvlink_step_latency_ns);
  EXPECT_EQ(collective.net_step_latency_ns, *c.net_step_latency_ns);
  EXPECT_DOUBLE_EQ(collective.reduction_gbytes_per_s, 0);  // NCCL's reductions stay free
}

TEST(CollectiveCalibration, StepLatenciesAreNonNegative) {
  // Intercepts 10 us for the 2-step all-reduce, 12 us for a 1-step all-gather: unconstrained, the
  // step would be -2 us; constrained, it is 0 and the base their mean, 11 us.
  LinkOpFit all_reduce;
  all_reduce.op = CollectiveOp::kAllReduce;
  all_reduce.ranks = 2;
  all_reduce.steps = 2;
  all_reduce.small.latency_s = 10e-6;
  LinkOpFit all_gather = all_reduce;
  all_gather.op = CollectiveOp::kAllGather;
  all_gather.steps = 1;
  all_gather.small.latency_s = 12e-6;
  const StepLatencies s = fit_step_latencies(std::vector<LinkOpFit>{all_reduce, all_gather});
  ASSERT_TRUE(s.nvlink_step_s.has_value());
  EXPECT_DOUBLE_EQ(*s.nvlink_step_s, 0);
  EXPECT_NEAR(s.base_s, 11e-6, 1e-15);
  EXPECT_FALSE(s.net_step_s.has_value());
  // Negative intercepts (noise at tiny sizes) give zeros, not negative latencies.
  all_reduce.small.latency_s = -1e-6;
  all_gather.small.latency_s = -2e-6;
  const StepLatencies zero = fit_step_latencies(std::vector<LinkOpFit>{all_reduce, all_gather});
  EXPECT_DOUBLE_EQ(zero.base_s, 0);
  EXPECT_DOUBLE_EQ(*zero.nvlink_step_s, 0);
  EXPECT_EQ(thrown_key([] { fit_step_latencies(std::vector<LinkOpFit>{}); }), "calibrate.collectives");
}

TEST(CollectiveCalibration, BusbwAboveTheLineRateIsCappedAndSaid) {
  const CollectiveCalibration c = calibrate_collectives(measured(1, 8), 300e9, kNicLine);
  EXPECT_DOUBLE_EQ(*c.nvlink_efficiency, 1.0);
  EXPECT_TRUE(c.nvlink_capped);
  EXPECT_NE(to_calibration_toml(c).find("capped at 1"), std::string::npos);
}

TEST(CollectiveCalibration, BadInputNamesTheKey) {
  EXPECT_EQ(thrown_key([] { calibrate_collectives(backend::LinkMeasurements{}, kNvlinkLine, kNicLine); }),
            "calibrate.collectives");
  EXPECT_EQ(thrown_key([] { calibrate_collectives(measured(1, 2), 0, kNicLine); }), "cluster.nvlink_gbytes_per_s");
  EXPECT_EQ(thrown_key([] { calibrate_collectives(measured(1, 2), kNvlinkLine, -1); }), "cluster.nic_gbps");
}

TEST(CollectiveCalibration, TextAndJsonCarryTheTable) {
  const CollectiveCalibration c = calibrate_collectives(measured(2, 2), kNvlinkLine, kNicLine);
  const std::string text = to_text(c);
  for (const char* needle : {"collectives over NCCL: 4 GPUs on 2 hosts, 2 per host", "algbw GB/s", "busbw GB/s",
                             "intra-node", "inter-node", "reduce_scatter", "ping-pong", "1 GiB", "8 KiB",
                             "collective latencies base 6.000 us, NVLink step 0.500 us, network step 3.000 us"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  // One table row per measured point.
  std::size_t rows = 0;
  for (std::size_t at = text.find("\n  intra-node"); at != std::string::npos;
       at = text.find("\n  intra-node", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 4 * 10 + 4);  // 4 ops x 10 sizes, and 4 fits

  JsonWriter j;
  write_json(j, c);
  const std::string json = j.str();
  for (const char* needle : {"\"ranks\": 4", "\"hosts\": 2", "\"points\": [", "\"fits\": [", "\"link\": \"inter-node\"",
                             "\"op\": \"send_recv\"", "\"busbw_bytes_per_s\"", "\"algbw_bytes_per_s\"",
                             "\"net_step_latency_us\": 3", "\"base_latency_us\": 6"}) {
    EXPECT_NE(json.find(needle), std::string::npos) << needle << "\n" << json;
  }
  const CollectiveCalibration one_host = calibrate_collectives(measured(1, 2), kNvlinkLine, kNicLine);
  JsonWriter k;
  write_json(k, one_host);
  EXPECT_NE(k.str().find("\"network_efficiency\": null"), std::string::npos) << k.str();
  EXPECT_NE(k.str().find("\"net_step_latency_us\": null"), std::string::npos) << k.str();
}

// run_calibration takes the line rates from the scenario and the measured GPU, and writes the links'
// sections into the file after [compute].
TEST(CollectiveCalibration, TheCalibrationStudyFitsTheProbesLinks) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  Scenario s;
  s.cluster.gpus = 8;
  s.model.num_layers = 2;
  s.model.hidden_size = 1024;
  s.model.num_attention_heads = 16;
  s.model.seq_length = 512;
  s.model.vocab_size = 32000;
  s.plan = models::ParallelPlan{};
  s.plan.micro_batch_size = 1;
  s.plan.global_batch_size = 8;
  backend::GpuProbe p;
  p.backend = "test";
  p.device = "NVIDIA H200";
  p.gemm_seconds = [gpu](const models::GemmShape& shape) {
    return models::gemm_flops(shape) / (0.7 * gpu.peak_bf16_dense_tflops * 1e12);
  };
  p.copy_bytes_per_s = [gpu] { return 0.9 * gpu.hbm_tbytes_per_s * 1e12; };
  p.kernel_gap_s = [] { return 2e-6; };
  const CalibrationReport without = run_calibration(s, gpu, p);
  EXPECT_FALSE(without.collectives.has_value());
  EXPECT_NE(to_text(without).find("collectives          not measured"), std::string::npos);
  EXPECT_NE(to_json(without).find("\"collectives\": null"), std::string::npos);

  p.links = [] { return measured(2, 8); };
  const CalibrationReport r = run_calibration(s, gpu, p);
  ASSERT_TRUE(r.collectives.has_value());
  // NVLink: the scenario's default A100 is not what ran; the measured H200's 900 / 2 GB/s each way.
  EXPECT_DOUBLE_EQ(r.collectives->nvlink_line_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(r.collectives->nic_line_bytes_per_s, 25e9);  // 200 Gb/s
  s.cluster.nvlink_gbytes_per_s = 400;
  s.cluster.nic_gbps = 400;
  const CalibrationReport set = run_calibration(s, gpu, p);
  EXPECT_DOUBLE_EQ(set.collectives->nvlink_line_bytes_per_s, 400e9);
  EXPECT_DOUBLE_EQ(set.collectives->nic_line_bytes_per_s, 50e9);

  models::ComputeCalibration compute = models::default_compute_calibration(gpu);
  backend::FabricParams fabric;
  models::CollectiveParams collective;
  const std::string toml = to_calibration_toml(r);
  apply_calibration_text(toml, "calibrate output", compute, fabric, &collective);
  EXPECT_NEAR(compute.best_gemm_efficiency, r.calibration.best_gemm_efficiency, 5e-5);
  EXPECT_NEAR(fabric.nvlink_efficiency, *r.collectives->nvlink_efficiency, 5e-5);
  EXPECT_NEAR(fabric.network_efficiency, *r.collectives->network_efficiency, 5e-5);
  EXPECT_EQ(collective.net_step_latency_ns, 3000);
  EXPECT_NE(to_json(r).find("\"nvlink_efficiency\": 0.79"), std::string::npos) << to_json(r);
}

}  // namespace
}  // namespace megasim::scenarios
