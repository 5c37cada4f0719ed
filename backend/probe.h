// What a real backend measures for `megasim calibrate` (DESIGN.md "Real backends"): the probes a
// calibration study asks (scenarios/studies/calibrate/calibrate_study.h for a GPU,
// scenarios/studies/calibrate/cpu_calibration.h for the cpu backend) and the link measurements they
// return. A backend makes them inside its job (Backend::probe_gpu, Backend::probe_cpu,
// backend/backend.h); the studies decide what to ask and fit the answers, so they run and are
// tested without the hardware. Times are seconds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/host_groups.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/parallel_groups.h"

namespace megasim::backend {

// One measured collective size over one kind of link (nccl-tests' conventions).
struct LinkPoint {
  HostLink link = HostLink::kIntraNode;
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;  // kSendRecv: the ping-pong
  std::int64_t ranks = 0;
  double bytes = 0;    // nccl-tests size
  double seconds = 0;  // one call, the slowest rank's

  [[nodiscard]] double algbw_bytes_per_s() const { return bytes / seconds; }
  [[nodiscard]] double bus_bytes() const { return bytes * models::bus_bandwidth_factor(op, ranks); }
  [[nodiscard]] double busbw_bytes_per_s() const { return bus_bytes() / seconds; }
};

// A job's links, measured on every rank of it at once.
struct LinkMeasurements {
  std::int64_t ranks = 0;
  std::int64_t hosts = 0;
  std::int64_t ranks_per_host = 0;
  int repetitions = 0;
  std::vector<LinkPoint> points;
};

// A GPU and the links of its job (the cuda backend).
struct GpuProbe {
  std::string backend;  // "cuda"
  std::string device;   // the device's own name, e.g. "NVIDIA H200"
  models::GpuSpec gpu;  // what efficiencies are relative to: ProbeOptions::gpu_name, or the device's
  std::function<double(const models::GemmShape&)> gemm_seconds;  // one kernel
  // One kernel with FP8 E4M3 operands (bf16 output, as Transformer Engine's forward GEMMs on
  // Hopper); empty on a GPU without FP8 tensor cores.
  std::function<double(const models::GemmShape&)> fp8_gemm_seconds;
  std::string fp8_not_measured;              // why fp8_gemm_seconds is empty on a GPU with FP8 ("" otherwise)
  std::function<double()> copy_bytes_per_s;  // HBM bytes read + written per second
  std::function<double()> kernel_gap_s;
  // The job's links, measured on every rank of it at once (run after the single-GPU measurements);
  // empty for a job of one GPU.
  std::function<LinkMeasurements()> links;
};

// The links of the cpu backend's MPI job, measured before its compute.
struct CpuLinkMeasurement {
  int ranks = 0;
  int hosts = 1;
  int ranks_per_host = 0;    // 0: ranks (one host)
  double p2p_latency_s = 0;  // two ranks of one host; 0 when no host has two
  double p2p_bytes_per_s = 0;
  double inter_p2p_latency_s = 0;  // two hosts; 0 on one host
  double inter_p2p_bytes_per_s = 0;
  double allreduce_small_bytes = 0;
  double allreduce_small_s = 0;
  int allreduce_small_ranks = 0;  // the group it ran over (intra-node, else inter-node); 0: ranks
};

// The cpu backend's measurements of one rank of its job, the compute timed in place (each op in
// its stage's compute sequence, every stage at once, as in an iteration). Every function is
// collective: every rank calls the same ones in the same order, and gets the same numbers.
struct CpuProbe {
  std::string device;  // "cpu: <processor> (Eigen float32, one core per rank)"
  double memory_gbytes_per_rank = 0;
  std::function<double(const models::GemmShape&)> gemm_seconds;  // one (batched) product of the plan
  std::function<double(double bytes)> memory_op_seconds;         // one op of the plan moving `bytes`
  std::function<double()> op_overhead_s;
  // One call over this rank's group of that kind (kData or kTensor).
  std::function<double(models::GroupKind, models::CollectiveOp, double bytes)> collective_seconds;
  // One call over this rank's intra-node or inter-node group (host_groups.h); called only when
  // links.hosts >= 2.
  std::function<double(HostLink, models::CollectiveOp, double bytes)> host_collective_seconds;
  CpuLinkMeasurement links;
};

}  // namespace megasim::backend
