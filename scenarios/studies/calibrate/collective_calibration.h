// The collective part of `megasim calibrate --backend cuda --gpus N`: what the cost model of
// collectives (models/collective.h; the fabric's link efficiencies, backend/sim/fabric.h) takes from
// nccl-tests-style measurements of a job's links (backend/cuda/nccl_probe.h measures them: all-reduce,
// all-gather and reduce-scatter per size over each kind of host group, backend/host_groups.h, and a
// ping-pong between two ranks). The fits, with C the collectives measured on a link:
//
//  - Bandwidth. The simulator moves a collective's bus bytes (size x nccl-tests' bus factor) at
//    line rate x efficiency, so an efficiency is a large-message busbw over the line rate:
//      nvlink_efficiency  = mean over C of intra-node busbw at the largest size / NVLink rate each way
//      network_efficiency = mean over C of inter-node busbw at the largest size / NIC rate
//    (each capped at 1: NVLink SHARP all-reduce can beat the line rate). The line rates are the
//    scenario's: cluster.nvlink_gbytes_per_s, or half the measured GPU's NVLink total when 0;
//    cluster.nic_gbps (one NIC per GPU, as the inter-node groups drive them).
//  - Latency. Per link and op (the ping-pong as a send_recv), a least-squares fit of
//      seconds = latency + bus bytes / bandwidth
//    over the small messages (<= kSmallMessageBytes), residuals relative to the time (weights
//    1/seconds^2) so that the smallest sizes count as much as the larger ones. models/collective.h
//    costs a call base + steps x step latency, where a group of n inside one server is a flat ring
//    of NVLink steps (all-reduce 2(n-1), all-gather and reduce-scatter n-1, send/recv 1) and a group
//    of one rank per server the same ring of network steps; the intercepts are fitted to that by
//    non-negative least squares:
//      latency(intra, op, n) = base_latency + steps(op, n) x nvlink_step_latency
//      latency(inter, op, m) = base_latency + steps(op, m) x net_step_latency
//    A link the job does not have leaves its efficiency and step latency at the defaults (the file
//    does not carry them), and the report says so. NCCL's reductions are fused into its copies, so
//    reduction_gbytes_per_s stays 0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/host_groups.h"
#include "backend/probe.h"
#include "models/collective.h"
#include "sim/time.h"

namespace megasim::scenarios {

class JsonWriter;

inline constexpr double kSmallMessageBytes = 1024.0 * 1024;

struct LineFit {
  double latency_s = 0;
  double bus_bytes_per_s = 0;  // 0 when the times do not grow with the size
};
// The relative least-squares fit of the header over `points` (one link and op). Throws
// sim::ConfigError("calibrate.collectives") for fewer than two distinct sizes or a time <= 0.
LineFit fit_line(std::span<const backend::LinkPoint> points);

// Algorithm steps of the model's flat ring of n members (header): all-reduce 2(n-1), all-gather and
// reduce-scatter n-1, send/recv 1.
std::int64_t ring_steps(models::CollectiveOp op, std::int64_t n);

struct LinkOpFit {
  backend::HostLink link = backend::HostLink::kIntraNode;
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  std::int64_t ranks = 0;
  std::int64_t steps = 0;
  LineFit small;                       // over the small messages
  double largest_bytes = 0;            // the largest size measured
  double large_busbw_bytes_per_s = 0;  // busbw at that size
};

// base + steps x step latency per link, seconds; a step latency is nullopt for a link without fits.
struct StepLatencies {
  double base_s = 0;
  std::optional<double> nvlink_step_s;
  std::optional<double> net_step_s;
};
// The non-negative least-squares fit of the header's intercept equations. Throws
// sim::ConfigError("calibrate.collectives") when `fits` is empty.
StepLatencies fit_step_latencies(std::span<const LinkOpFit> fits);

struct CollectiveCalibration {
  backend::LinkMeasurements measured;
  std::vector<LinkOpFit> fits;  // per link and op, in measuring order
  double nvlink_line_bytes_per_s = 0;
  double nic_line_bytes_per_s = 0;
  // Mean large-message busbw of the collectives per link; nullopt when the job lacks the link.
  std::optional<double> intra_node_busbw_bytes_per_s;
  std::optional<double> inter_node_busbw_bytes_per_s;
  std::optional<double> nvlink_efficiency;
  std::optional<double> network_efficiency;
  bool nvlink_capped = false;  // the busbw exceeded the line rate
  bool network_capped = false;
  StepLatencies latencies;
  // What the file carries in [collective] (whole nanoseconds), steps of unmeasured links nullopt.
  sim::SimTime base_latency_ns = 0;
  std::optional<sim::SimTime> nvlink_step_latency_ns;
  std::optional<sim::SimTime> net_step_latency_ns;
};

// Fits the header's parameters. Line rates in bytes/s each way (> 0). Throws
// sim::ConfigError("calibrate.collectives") when no link was measured or a fit has too few sizes.
CollectiveCalibration calibrate_collectives(const backend::LinkMeasurements& measured, double nvlink_line_bytes_per_s,
                                            double nic_line_bytes_per_s);

// The [network] and [collective] sections, with comments stating what was measured.
std::string to_calibration_toml(const CollectiveCalibration& c);
// The measured table (size, time, algbw, busbw per link and op) and the fitted values.
std::string to_text(const CollectiveCalibration& c);
// An object: "ranks", "hosts", "points" (link, op, ranks, bytes, seconds, algbw, busbw), "fits",
// and the fitted values (null for a link not measured).
void write_json(JsonWriter& j, const CollectiveCalibration& c);

}  // namespace megasim::scenarios
