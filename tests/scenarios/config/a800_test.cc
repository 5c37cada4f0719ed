// The NVIDIA A800 (models/gpu_spec.cc): the A100's GA100 compute with NVLink at 400 GB/s instead of
// 600 (NVIDIA, November 2022). So a GEMM takes the same time on both, with the defaults and with the
// public A100 calibration file the MegaScale scenarios use, and a TP collective inside one server
// has the same latency and 600/400 = 1.5 times the bandwidth term. Every expectation is the datasheet
// arithmetic, written out here.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/sim/tp_collective_time.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/op_time.h"
#include "models/workload.h"
#include "scenarios/config/device.h"
#include "scenarios/config/loader.h"
#include "scenarios/config/scenario.h"
#include "sim/time.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

using models::CollectiveOp;

const std::string kMegaScale175b = std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale/175b_megascale.toml";

TEST(A800, IsAcceptedByNameAndAlias) {
  for (const char* name : {"A800-SXM-80GB", "A800", "a800", "a800-sxm-80gb"}) {
    Scenario s;
    apply_override(s, std::string("cluster.gpu=") + name);
    EXPECT_EQ(s.gpu, "A800-SXM-80GB") << name;
  }
  const models::GpuSpec& a800 = models::find_gpu("A800");
  EXPECT_DOUBLE_EQ(a800.peak_bf16_dense_tflops, 312.0);
  EXPECT_DOUBLE_EQ(a800.hbm_gbytes, 80.0 * 1.073741824);  // 80 GiB
  EXPECT_DOUBLE_EQ(a800.hbm_tbytes_per_s, 2.039);
  EXPECT_DOUBLE_EQ(a800.nvlink_total_gbytes_per_s, 400.0);
  EXPECT_DOUBLE_EQ(a800.best_gemm_efficiency, models::find_gpu("A100").best_gemm_efficiency);
  // The name CUDA reports for the SXM4 part, as for the A100 ("NVIDIA A100-SXM4-80GB").
  ASSERT_NE(models::gpu_for_device_name("NVIDIA A800-SXM4-80GB"), nullptr);
  EXPECT_EQ(models::gpu_for_device_name("NVIDIA A800-SXM4-80GB")->name, "A800-SXM-80GB");
  EXPECT_EQ(models::gpu_for_device_name("NVIDIA A100-SXM4-80GB")->name, "A100-SXM-80GB");
}

// Same defaults but NCCL's share of the SMs: two channels per NVLink, 8 links of 50 GB/s on the A800
// against 12 on the A100 (compute_calibration.cc).
TEST(A800, HasTheA100sComputeDefaults) {
  const models::ComputeCalibration a100 = models::default_compute_calibration(models::find_gpu("A100"));
  const models::ComputeCalibration a800 = models::default_compute_calibration(models::find_gpu("A800"));
  EXPECT_EQ(a800.best_gemm_efficiency, a100.best_gemm_efficiency);
  EXPECT_EQ(a800.sm_count, 108);
  EXPECT_EQ(a800.sm_count, a100.sm_count);
  EXPECT_EQ(a800.gemm_k_overhead, a100.gemm_k_overhead);
  EXPECT_EQ(a800.memory_efficiency, a100.memory_efficiency);
  EXPECT_EQ(a800.flash_attention_forward_efficiency, a100.flash_attention_forward_efficiency);
  EXPECT_EQ(a800.flash_attention_backward_efficiency, a100.flash_attention_backward_efficiency);
  EXPECT_EQ(a800.launch_overhead_ns, a100.launch_overhead_ns);
  EXPECT_DOUBLE_EQ(a100.comm_sm_fraction, 24.0 / 108);
  EXPECT_DOUBLE_EQ(a800.comm_sm_fraction, 16.0 / 108);
}

// The shipped MegaScale scenario runs on A800s with the public A100 file; with --set
// cluster.gpu=A100-SXM-80GB every GEMM of a layer takes the same time, and so does its compute.
TEST(A800, GemmTimesEqualTheA100sWithThePublicCalibration) {
  const Scenario a800 = load_scenario_file(kMegaScale175b);
  ASSERT_EQ(a800.gpu, "A800-SXM-80GB");
  Scenario a100 = a800;
  apply_override(a100, "cluster.gpu=A100-SXM-80GB");
  const DeviceModel d800 = device_model(a800);
  const DeviceModel d100 = device_model(a100);
  EXPECT_DOUBLE_EQ(d800.compute.best_gemm_efficiency, 0.754);  // scenarios/calibration/a100_public.toml
  EXPECT_EQ(d800.compute.best_gemm_efficiency, d100.compute.best_gemm_efficiency);

  const models::ResolvedPlan plan =
      models::resolve_plan(a800.model, a800.plan, a800.cluster.gpus, a800.cluster.gpus_per_server);
  const models::Workload w = models::build_workload(a800.model, plan);
  int lists = 0;
  for (const models::KernelList& k : w.kernels) {
    const double gemm800 = models::kernel_list_gemm_time_s(k, plan.plan, d800.gpu, d800.compute);
    const double gemm100 = models::kernel_list_gemm_time_s(k, plan.plan, d100.gpu, d100.compute);
    EXPECT_EQ(gemm800, gemm100) << k.name;
    EXPECT_EQ(models::kernel_list_compute_time_s(k, plan.plan, d800.gpu, d800.compute),
              models::kernel_list_compute_time_s(k, plan.plan, d100.gpu, d100.compute))
        << k.name;
    if (gemm800 > 0) ++lists;
  }
  EXPECT_GT(lists, 0);
}

// A ring over the 8 GPUs of one server: latency base + steps x nvlink_step, then factor x S over the
// port's rate each way x nvlink_efficiency; all-reduce factor 2(n-1)/n in 2(n-1) steps, all-gather
// (n-1)/n in n-1 (nccl-tests PERFORMANCE.md). Each way per GPU: 600/2 = 300 GB/s on the A100,
// 400/2 = 200 GB/s on the A800.
TEST(A800, NvlinkCollectivesTakeOneAndAHalfTimesTheBandwidthTerm) {
  const double bytes = 64.0 * 1024 * 1024;
  const auto time_s = [&](const char* gpu, CollectiveOp op) {
    Scenario s;
    s.gpu = gpu;
    s.cluster.gpus = 8;
    const topo::Topology topo = topo::Topology::build(effective_cluster(s));
    const DeviceModel d = device_model(s);
    std::vector<topo::GpuId> group;
    for (std::int32_t g = 0; g < 8; ++g) group.emplace_back(g);
    return sim::to_seconds(backend::tp_collective_time_ns(topo, d.fabric, d.collective, group, op, bytes));
  };
  const Scenario defaults;
  const double efficiency = defaults.fabric.nvlink_efficiency;  // 0.8
  for (const CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather}) {
    const bool all_reduce = op == CollectiveOp::kAllReduce;
    const double factor = all_reduce ? 2.0 * 7 / 8 : 7.0 / 8;
    const std::int64_t steps = all_reduce ? 14 : 7;
    const double latency =
        sim::to_seconds(defaults.collective.base_latency_ns + steps * defaults.collective.nvlink_step_latency_ns);
    const double a100_bandwidth_term = factor * bytes / (300e9 * efficiency);
    const double a800_bandwidth_term = factor * bytes / (200e9 * efficiency);
    EXPECT_DOUBLE_EQ(a800_bandwidth_term, 1.5 * a100_bandwidth_term);
    // The fast path rounds each of its `steps` phases up to a whole ns.
    const double rounding_s = static_cast<double>(steps) * 1e-9;
    const double a100 = time_s("A100-SXM-80GB", op);
    const double a800 = time_s("A800-SXM-80GB", op);
    EXPECT_NEAR(a100, latency + a100_bandwidth_term, rounding_s) << all_reduce;
    EXPECT_NEAR(a800, latency + a800_bandwidth_term, rounding_s) << all_reduce;
    EXPECT_NEAR(a800 - latency, 1.5 * (a100 - latency), 2.5 * rounding_s) << all_reduce;
  }
}

}  // namespace
}  // namespace megasim::scenarios
