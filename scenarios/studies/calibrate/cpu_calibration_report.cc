// The cpu calibration as a calibration file, text and JSON
// (scenarios/studies/calibrate/cpu_calibration.h).
#include <fmt/format.h>

#include <string>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/studies/calibrate/cpu_calibration.h"

namespace megasim::scenarios {
namespace {

// The inter-node link in the [device] section, or a comment saying it was not measured.
std::string inter_node_lines(const CpuCalibrationReport& r) {
  if (!(r.inter_node_bytes_per_s > 0)) {
    return "# inter_node_gbytes_per_s: not measured (the job ran on one host; the cluster keeps its NIC speed)\n";
  }
  return fmt::format(
      "# {} x {}. Inter-node = the bus bandwidth of the plan's collectives over one rank per host\n"
      "# ({} of them measured; none: point-to-point). Point-to-point between hosts: {:.2f} GB/s, {:.2f} us.{}\n"
      "inter_node_gbytes_per_s = {:.6g}\n",
      counted(r.links.hosts, "host"), counted(r.links.ranks_per_host, "rank"), r.inter_node.size(),
      r.links.inter_p2p_bytes_per_s / 1e9, r.links.inter_p2p_latency_s * 1e6,
      r.links.ranks_per_host < 2 ? " One rank per host: intra-node = inter-node." : "", r.inter_node_bytes_per_s / 1e9);
}

// Rows over the plan's groups (`link` empty: labelled dp or tp) or over host groups ("intra", "inter").
void append_collectives(std::string& out, const std::string& link, const std::vector<CpuCollectiveMeasurement>& rows) {
  if (rows.empty()) return;
  out += fmt::format("{:<6} {:<16} {:>7} {:>14} {:>7} {:>11} {:>11}\n", link.empty() ? "group" : "link", "collective",
                     "members", "bytes", "calls", "time (ms)", "bus GB/s");
  for (const CpuCollectiveMeasurement& c : rows) {
    const std::string label = !link.empty() ? link : c.group == models::GroupKind::kData ? "dp" : "tp";
    out += fmt::format("{:<6} {:<16} {:>7} {:>14.0f} {:>7} {:>11.4f} {:>11.2f}\n", label, models::to_string(c.op),
                       c.members, c.bytes, c.calls, c.measured_s * 1e3, c.bus_bytes_per_s / 1e9);
  }
}

void write_collectives(JsonWriter& j, const char* key, const std::vector<CpuCollectiveMeasurement>& rows) {
  j.key(key).begin_array();
  for (const CpuCollectiveMeasurement& c : rows) {
    j.begin_object()
        .field("group", c.group == models::GroupKind::kData ? "data" : "tensor")
        .field("members", c.members)
        .field("op", models::to_string(c.op))
        .field("bytes", c.bytes)
        .field("calls", c.calls)
        .field("seconds", c.measured_s)
        .field("bus_bytes_per_s", c.bus_bytes_per_s)
        .end_object();
  }
  j.end_array();
}

}  // namespace

std::string to_calibration_toml(const CpuCalibrationReport& r) {
  std::string out = fmt::format(
      "# Measured by `megasim calibrate --backend cpu` with {} ranks, on the ops of scenario '{}'.\n"
      "# Use it with cluster.gpu = \"calibrated\". Peak = the fastest product of the plan, memory bandwidth = the\n"
      "# fastest memory-bound op of the plan; intra-node = the bus bandwidth of the plan's collectives\n"
      "# ({} of them measured; none: point-to-point). Point-to-point: {:.2f} GB/s, {:.2f} us.\n"
      "[device]\n"
      "name = \"{}\"\n"
      "peak_tflops = {:.6g}\n"
      "memory_tbytes_per_s = {:.6g}\n"
      "memory_gbytes = {:.4g}\n"
      "intra_node_gbytes_per_s = {:.6g}\n"
      "{}\n"
      "[compute]\n"
      "best_gemm_efficiency = 1.0\n"
      "gemm_k_overhead = 0\n"
      "memory_efficiency = {:.6g}\n"
      "launch_overhead_us = {:.4f}\n"
      "gemm_points = [\n",
      r.links.ranks, r.scenario, r.collectives.size(), r.links.p2p_bytes_per_s / 1e9, r.links.p2p_latency_s * 1e6,
      r.device.name, r.device.peak_bf16_dense_tflops, r.device.hbm_tbytes_per_s, r.device.hbm_gbytes,
      r.device.nvlink_total_gbytes_per_s / 2, inter_node_lines(r), r.compute.memory_efficiency,
      static_cast<double>(r.compute.launch_overhead_ns) / 1e3);
  for (const models::GemmPoint& p : r.compute.gemm_points) {
    out += fmt::format("  {{ m = {}, n = {}, k = {}, efficiency = {:.6g} }},\n", p.m, p.n, p.k, p.efficiency);
  }
  out += "]\nmemory_points = [\n";
  for (const models::MemoryPoint& p : r.compute.memory_points) {
    out += fmt::format("  {{ bytes = {:.0f}, efficiency = {:.6g} }},\n", p.bytes, p.efficiency);
  }
  out += fmt::format(
      "]\n\n"
      "[network]\n"
      "nvlink_efficiency = 1.0\n"
      "{}\n"
      "[collective]\n"
      "base_latency_us = {:.3f}\n"
      "nvlink_step_latency_us = {:.3f}\n"
      "net_step_latency_us = {:.3f}\n"
      "reduction_gbytes_per_s = {:.6g}\n",
      r.inter_node_bytes_per_s > 0 ? "network_efficiency = 1.0  # the NIC rate is the measured bus bandwidth\n" : "",
      static_cast<double>(r.collective.base_latency_ns) / 1e3,
      static_cast<double>(r.collective.nvlink_step_latency_ns) / 1e3,
      static_cast<double>(r.collective.net_step_latency_ns) / 1e3, r.collective.reduction_gbytes_per_s);
  return out;
}

std::string to_text(const CpuCalibrationReport& r) {
  std::string out = fmt::format("calibration of the cpu backend on {} ({}), ops of '{}'\n", r.device.name,
                                counted(r.links.ranks, "rank"), r.scenario);
  out += fmt::format("{:>6} {:>6} {:>6} {:>6} {:>7} {:>11} {:>9}\n", "m", "n", "k", "batch", "calls", "time (ms)",
                     "GFLOP/s");
  for (const CpuOpMeasurement& m : r.products) {
    out += fmt::format("{:>6} {:>6} {:>6} {:>6} {:>7} {:>11.4f} {:>9.2f}\n", m.shape.m, m.shape.n, m.shape.k,
                       m.shape.batch, m.calls, m.measured_s * 1e3, m.rate / 1e9);
  }
  out += fmt::format("{:>14} {:>7} {:>11} {:>9}\n", "bytes", "calls", "time (ms)", "GB/s");
  for (const CpuOpMeasurement& m : r.memory_ops) {
    out += fmt::format("{:>14.0f} {:>7} {:>11.4f} {:>9.2f}\n", m.bytes, m.calls, m.measured_s * 1e3, m.rate / 1e9);
  }
  append_collectives(out, "", r.collectives);
  append_collectives(out, "intra", r.intra_node);
  append_collectives(out, "inter", r.inter_node);
  append_collectives(out, "inter", r.inter_node_probes);
  out += fmt::format(
      "peak (fastest product)     {:.2f} GFLOP/s\n"
      "memory-bound ops           fastest {:.2f} GB/s, plan-weighted {:.2f} GB/s\n"
      "op overhead                {:.3f} us\n"
      "point-to-point             {:.2f} GB/s, {:.2f} us\n"
      "small all-reduce           {:.0f} B in {:.1f} us\n"
      "intra-node bandwidth       {:.2f} GB/s ({})\n"
      "inter-node                 {}\n"
      "reductions                 {}\n",
      r.peak_flops / 1e9, r.memory_bytes_per_s / 1e9, r.plan_memory_bytes_per_s / 1e9, r.op_overhead_s * 1e6,
      r.links.p2p_bytes_per_s / 1e9, r.links.p2p_latency_s * 1e6, r.links.allreduce_small_bytes,
      r.links.allreduce_small_s * 1e6, r.intra_node_bytes_per_s / 1e9,
      r.collectives.empty()        ? "point-to-point"
      : r.links.hosts < 2          ? "the plan's copying collectives"
      : r.links.ranks_per_host < 2 ? "one rank per host: the inter-node figure"
                                   : "the plan's copying collectives over each host's ranks",
      r.inter_node_bytes_per_s > 0 ? fmt::format("{:.2f} GB/s over {} hosts (point-to-point {:.2f} GB/s, {:.2f} us)",
                                                 r.inter_node_bytes_per_s / 1e9, r.links.hosts,
                                                 r.links.inter_p2p_bytes_per_s / 1e9, r.links.inter_p2p_latency_s * 1e6)
                                   : std::string("no inter-node link measured (the job ran on one host)"),
      r.reduction_bytes_per_s > 0 ? fmt::format("{:.2f} GB/s of received data", r.reduction_bytes_per_s / 1e9)
                                  : std::string("free (no time beyond the transfer)"));
  return out;
}

std::string to_json(const CpuCalibrationReport& r) {
  JsonWriter j;
  j.begin_object()
      .field("backend", "cpu")
      .field("device", r.device.name)
      .field("scenario", r.scenario)
      .field("ranks", r.links.ranks)
      .field("peak_flops", r.peak_flops)
      .field("memory_bytes_per_s", r.memory_bytes_per_s)
      .field("plan_memory_bytes_per_s", r.plan_memory_bytes_per_s)
      .field("op_overhead_s", r.op_overhead_s)
      .field("p2p_latency_s", r.links.p2p_latency_s)
      .field("p2p_bytes_per_s", r.links.p2p_bytes_per_s)
      .field("intra_node_bytes_per_s", r.intra_node_bytes_per_s)
      .field("hosts", r.links.hosts)
      .field("reduction_bytes_per_s", r.reduction_bytes_per_s);
  if (r.inter_node_bytes_per_s > 0) {
    j.field("inter_node_bytes_per_s", r.inter_node_bytes_per_s)
        .field("inter_p2p_latency_s", r.links.inter_p2p_latency_s)
        .field("inter_p2p_bytes_per_s", r.links.inter_p2p_bytes_per_s);
  } else {
    j.key("inter_node_bytes_per_s").null();  // one host: no inter-node link
  }
  j.key("products").begin_array();
  for (const CpuOpMeasurement& m : r.products) {
    j.begin_object()
        .field("m", m.shape.m)
        .field("n", m.shape.n)
        .field("k", m.shape.k)
        .field("batch", m.shape.batch)
        .field("calls", m.calls)
        .field("seconds", m.measured_s)
        .field("flops_per_s", m.rate)
        .end_object();
  }
  j.end_array();
  write_collectives(j, "collectives", r.collectives);
  write_collectives(j, "intra_node_collectives", r.intra_node);
  write_collectives(j, "inter_node_collectives", r.inter_node);
  j.key("memory_ops").begin_array();
  for (const CpuOpMeasurement& m : r.memory_ops) {
    j.begin_object().field("bytes", m.bytes).field("calls", m.calls).field("seconds", m.measured_s).end_object();
  }
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace megasim::scenarios
