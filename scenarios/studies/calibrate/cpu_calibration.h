// `megasim calibrate --backend cpu`: what the simulator needs to predict the cpu backend on this
// machine (DESIGN.md "Real backends"), measured on the ops of the scenario's own plan, and the
// calibration file that describes the machine as a device (calibration_file.h [device]; scenarios
// use it with cluster.gpu = "calibrated").
//
// The measuring is the backend's (backend/cpu/cpu_probe.h runs it on every rank of the job at once, so that
// the ranks share caches and memory bandwidth as they do in a real run, and times each op in place:
// in its stage's compute sequence, after the ops that run before it); this study decides what to
// measure and turns the measurements into the file:
//  - every distinct GEMM and (unfused) attention product of the plan, timed as the backend runs it:
//    the device's peak is the fastest of them in FLOP/s and each becomes a gemm_point (efficiency
//    relative to that peak; the calibrated device's curve is flat, so a point is exact for its shape);
//  - every distinct memory-bound op size of the plan: the device's memory bandwidth is the fastest
//    of them and each becomes a memory_point (cache-resident small ops run faster than streaming
//    large ones; the cost model interpolates between the points);
//  - the fixed cost of one op (launch_overhead_us);
//  - MPI between ranks: every distinct collective of the plan (data-parallel ones over a data group
//    of this job, tensor-parallel ones over a tensor group), made as the backend makes it. The
//    plan-weighted bus bandwidth (nccl-tests' bus factors) of those that only copy (all-gather,
//    broadcast, all-to-all; an all-gather of each reducing one's size when the plan has none) is the
//    intra-node bandwidth; what the reducing ones (all-reduce, reduce-scatter) take beyond their
//    transfer at that bandwidth is their reduction, (n-1)/n of their bytes per member, whose
//    plan-weighted rate is collective.reduction_gbytes_per_s (MPI sums on the core). A plan without
//    collectives over two or more ranks uses the point-to-point bandwidth (its traffic is pipeline
//    sends). The time of a small all-reduce less
//    its transfer is the collective base latency, the point-to-point latency one step's.
//  - Between hosts, when the MPI job spans two or more (MPI_COMM_TYPE_SHARED groups with the same
//    number of ranks each): the point-to-point link between two hosts (its latency is the network
//    step latency) and every distinct collective of the plan (op and size) over the inter-node
//    groups (one rank per host, the same local index, all at once), whose plan-weighted bus
//    bandwidth of the copying ones (all-gathers of the reducing ones' sizes when the plan has none)
//    is the inter-node bandwidth ([device] inter_node_gbytes_per_s, the cluster's NIC rate). The
//    intra-node bandwidth and the reduction rate then come from the same collectives over the
//    intra-node groups (every rank of a host), the plan's own groups possibly spanning hosts; with
//    one rank per host there is no intra-node link, and the inter-node figures stand for it. On one
//    host no inter-node link is measured and the report says so.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/host_groups.h"
#include "backend/probe.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/parallel_groups.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

// A distinct collective of the plan, measured over a group of its kind.
struct CpuCollectiveMeasurement {
  models::GroupKind group = models::GroupKind::kData;  // kData or kTensor
  std::int64_t members = 1;
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  double bytes = 0;        // nccl-tests size
  std::int64_t calls = 0;  // per iteration, one rank of each pipeline stage
  double measured_s = 0;
  double bus_bytes_per_s = 0;
};

// One distinct op of the plan: a product (shape set, bytes 0) or a memory-bound op (bytes set).
struct CpuOpMeasurement {
  models::GemmShape shape;
  double bytes = 0;
  std::int64_t calls = 0;  // per iteration, one rank of each pipeline stage
  double measured_s = 0;
  double rate = 0;  // FLOP/s (products) or bytes/s (memory-bound ops), without the op's fixed cost
};

struct CpuCalibrationReport {
  std::string scenario;
  std::vector<CpuOpMeasurement> products;
  std::vector<CpuOpMeasurement> memory_ops;
  std::vector<CpuCollectiveMeasurement> collectives;
  std::vector<CpuCollectiveMeasurement> link_probes;  // all-gathers measured for the link alone (calls 0)
  double peak_flops = 0;
  double memory_bytes_per_s = 0;       // the fastest memory-bound op
  double plan_memory_bytes_per_s = 0;  // total bytes over total time of one iteration's memory-bound ops
  double op_overhead_s = 0;
  backend::CpuLinkMeasurement links;
  // Multi-host jobs: the plan's distinct collectives over the intra-node groups (when a host has two
  // or more ranks) and over the inter-node groups, with all-gathers measured for the link alone
  // (calls 0) when every collective reduces. `group` is that of the plan's first call of the size.
  std::vector<CpuCollectiveMeasurement> intra_node;
  std::vector<CpuCollectiveMeasurement> inter_node;
  std::vector<CpuCollectiveMeasurement> inter_node_probes;
  double intra_node_bytes_per_s = 0;
  double inter_node_bytes_per_s = 0;  // 0: the job ran on one host
  double reduction_bytes_per_s = 0;   // 0: no time beyond the transfer
  // What the file carries.
  models::GpuSpec device;
  models::ComputeCalibration compute;
  models::CollectiveParams collective;
};

// The distinct products (kGemm and kAttention ops) and memory-bound op sizes of the workload, with
// their calls per iteration summed over one rank of each pipeline stage; in order of first appearance.
std::vector<CpuOpMeasurement> plan_products(const models::Workload& workload);
std::vector<CpuOpMeasurement> plan_memory_ops(const models::Workload& workload);
// The distinct collectives (group, op, bytes) with their calls per iteration (one rank of each
// stage): the data-parallel tasks when dp > 1, then the kernel lists' tensor-parallel calls when
// tp > 1 (repeat x count per run).
std::vector<CpuCollectiveMeasurement> plan_collectives(const models::Workload& workload);

// Runs the measurements of the header comment. Throws sim::ConfigError("plan.use_flash_attention",
// or "plan.attention_kernel") when the plan uses FlashAttention (a CPU has no fused attention kernel
// to calibrate) and
// ("--backend") when the probe returns a time that is not positive. A measured op time includes the
// op's fixed cost, which the file gives as the launch overhead: rates and points are of the time
// without it (so the cost model charges an op its measured time).
CpuCalibrationReport run_cpu_calibration(const Scenario& scenario, const backend::CpuProbe& probe);

// The bus bandwidth of a link and the reduction rate from collectives measured over it (`rows`,
// whose measured_s and bus_bytes_per_s are set): the plan-weighted (calls, at least 1) bus
// bandwidth of the copying rows and `probes`; `fallback_bytes_per_s` when there are none. The
// reduction rate is (n-1)/n of the reducing rows' bytes per member over their time beyond the
// transfer at that bandwidth, weighted by calls; 0 when they take no longer.
struct CpuLinkRates {
  double bus_bytes_per_s = 0;
  double reduction_bytes_per_s = 0;
};
CpuLinkRates cpu_link_rates(const std::vector<CpuCollectiveMeasurement>& rows,
                            const std::vector<CpuCollectiveMeasurement>& probes, double fallback_bytes_per_s);

std::string to_calibration_toml(const CpuCalibrationReport& report);
std::string to_text(const CpuCalibrationReport& report);
std::string to_json(const CpuCalibrationReport& report);

}  // namespace megasim::scenarios
