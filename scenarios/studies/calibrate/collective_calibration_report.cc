// The collective calibration as a calibration file's sections, text and JSON
// (scenarios/studies/calibrate/collective_calibration.h).
#include <fmt/format.h>

#include <string>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/config/units.h"
#include "scenarios/studies/calibrate/collective_calibration.h"

namespace megasim::scenarios {
namespace {

using backend::HostLink;

std::string op_name(models::CollectiveOp op) {
  return op == models::CollectiveOp::kSendRecv ? "ping-pong" : std::string(models::to_string(op));
}

double gb(double bytes_per_s) {
  return bytes_per_s / 1e9;
}

// "all_reduce 361.2, all_gather 355.0, reduce_scatter 354.1" (GB/s at the largest size).
std::string per_op_busbw(const CollectiveCalibration& c, HostLink link) {
  std::string out;
  for (const LinkOpFit& f : c.fits) {
    if (f.link != link || f.op == models::CollectiveOp::kSendRecv) continue;
    out += fmt::format("{}{} {:.1f}", out.empty() ? "" : ", ", op_name(f.op), gb(f.large_busbw_bytes_per_s));
  }
  return out;
}

std::string sizes_text(const CollectiveCalibration& c) {
  double smallest = 0, largest = 0;
  for (const backend::LinkPoint& p : c.measured.points) {
    if (smallest == 0 || p.bytes < smallest) smallest = p.bytes;
    largest = std::max(largest, p.bytes);
  }
  return format_bytes(smallest) + " to " + format_bytes(largest);
}

std::string microseconds(const std::optional<sim::SimTime>& ns) {
  return ns ? fmt::format("{:.3f}", static_cast<double>(*ns) / 1e3) : std::string("(not measured)");
}

}  // namespace

std::string to_calibration_toml(const CollectiveCalibration& c) {
  const backend::LinkMeasurements& m = c.measured;
  std::string out = fmt::format(
      "\n# Collectives measured over NCCL on {} ({}, {} per host): all_reduce, all_gather and\n"
      "# reduce_scatter from {}, {} per size, the slowest rank's time; busbw as in nccl-tests.\n",
      counted(m.ranks, "GPU"), counted(m.hosts, "host"), m.ranks_per_host, sizes_text(c),
      counted(m.repetitions, "timed call"));
  if (c.intra_node_busbw_bytes_per_s) {
    out +=
        fmt::format("# intra-node: busbw {:.1f} GB/s at the largest size ({}) over NVLink's {:.1f} GB/s each way{}.\n",
                    gb(*c.intra_node_busbw_bytes_per_s), per_op_busbw(c, HostLink::kIntraNode),
                    gb(c.nvlink_line_bytes_per_s), c.nvlink_capped ? " (above it: capped at 1)" : "");
  } else {
    out +=
        "# intra-node: not measured (one GPU per host): nvlink_efficiency and nvlink_step_latency_us keep\n"
        "# their defaults.\n";
  }
  if (c.inter_node_busbw_bytes_per_s) {
    out += fmt::format("# inter-node: busbw {:.1f} GB/s at the largest size ({}) over the NIC's {:.1f} GB/s{}.\n",
                       gb(*c.inter_node_busbw_bytes_per_s), per_op_busbw(c, HostLink::kInterNode),
                       gb(c.nic_line_bytes_per_s), c.network_capped ? " (above it: capped at 1)" : "");
  } else {
    out +=
        "# inter-node: not measured (the job ran on one host): network_efficiency and net_step_latency_us keep\n"
        "# their defaults.\n";
  }
  out += "[network]\n";
  if (c.nvlink_efficiency) out += fmt::format("nvlink_efficiency = {:.4f}\n", *c.nvlink_efficiency);
  if (c.network_efficiency) out += fmt::format("network_efficiency = {:.4f}\n", *c.network_efficiency);
  out += fmt::format(
      "\n# Latencies: per link and op, time = latency + bus bytes / bandwidth fitted to the sizes up to {}\n"
      "# (relative residuals), and the intercepts fitted to base + steps x step latency, the steps of\n"
      "# models/collective.h's flat ring (non-negative least squares):\n",
      format_bytes(kSmallMessageBytes));
  for (const LinkOpFit& f : c.fits) {
    out += fmt::format("#   {:<10} {:<15} {:>4} ranks {:>4} steps  {:8.2f} us\n", to_string(f.link), op_name(f.op),
                       f.ranks, f.steps, f.small.latency_s * 1e6);
  }
  out += fmt::format("[collective]\nbase_latency_us = {:.3f}\n", static_cast<double>(c.base_latency_ns) / 1e3);
  if (c.nvlink_step_latency_ns)
    out += fmt::format("nvlink_step_latency_us = {}\n", microseconds(c.nvlink_step_latency_ns));
  if (c.net_step_latency_ns) out += fmt::format("net_step_latency_us = {}\n", microseconds(c.net_step_latency_ns));
  return out;
}

std::string to_text(const CollectiveCalibration& c) {
  const backend::LinkMeasurements& m = c.measured;
  std::string out = fmt::format("collectives over NCCL: {} on {}, {} per host\n", counted(m.ranks, "GPU"),
                                counted(m.hosts, "host"), m.ranks_per_host);
  out += fmt::format("  {:<10} {:<15} {:>5} {:>10} {:>11} {:>11} {:>11}\n", "link", "op", "ranks", "size", "time (us)",
                     "algbw GB/s", "busbw GB/s");
  for (const backend::LinkPoint& p : m.points) {
    out += fmt::format("  {:<10} {:<15} {:>5} {:>10} {:>11.2f} {:>11.2f} {:>11.2f}\n", to_string(p.link), op_name(p.op),
                       p.ranks, format_bytes(p.bytes), p.seconds * 1e6, gb(p.algbw_bytes_per_s()),
                       gb(p.busbw_bytes_per_s()));
  }
  out += fmt::format("  fits (latency over sizes up to {}; busbw at the largest size):\n",
                     format_bytes(kSmallMessageBytes));
  for (const LinkOpFit& f : c.fits) {
    out += fmt::format("  {:<10} {:<15} {:>4} steps  latency {:8.2f} us  busbw {:8.2f} GB/s at {}\n", to_string(f.link),
                       op_name(f.op), f.steps, f.small.latency_s * 1e6, gb(f.large_busbw_bytes_per_s),
                       format_bytes(f.largest_bytes));
  }
  out += c.nvlink_efficiency
             ? fmt::format("nvlink_efficiency    {:.4f} (busbw {:.1f} GB/s over NVLink {:.1f} GB/s{})\n",
                           *c.nvlink_efficiency, gb(*c.intra_node_busbw_bytes_per_s), gb(c.nvlink_line_bytes_per_s),
                           c.nvlink_capped ? ", capped" : "")
             : std::string("nvlink_efficiency    not measured (one GPU per host): default kept\n");
  out += c.network_efficiency
             ? fmt::format("network_efficiency   {:.4f} (busbw {:.1f} GB/s over the NIC's {:.1f} GB/s{})\n",
                           *c.network_efficiency, gb(*c.inter_node_busbw_bytes_per_s), gb(c.nic_line_bytes_per_s),
                           c.network_capped ? ", capped" : "")
             : std::string("network_efficiency   not measured (the job ran on one host): default kept\n");
  out += fmt::format("collective latencies base {:.3f} us, NVLink step {} us, network step {} us\n",
                     static_cast<double>(c.base_latency_ns) / 1e3, microseconds(c.nvlink_step_latency_ns),
                     microseconds(c.net_step_latency_ns));
  return out;
}

void write_json(JsonWriter& j, const CollectiveCalibration& c) {
  auto optional = [&](const char* name, const std::optional<double>& v) {
    if (v) {
      j.field(name, *v);
    } else {
      j.key(name).null();
    }
  };
  auto optional_us = [&](const char* name, const std::optional<sim::SimTime>& ns) {
    optional(name, ns ? std::optional<double>(static_cast<double>(*ns) / 1e3) : std::nullopt);
  };
  j.begin_object()
      .field("ranks", c.measured.ranks)
      .field("hosts", c.measured.hosts)
      .field("ranks_per_host", c.measured.ranks_per_host)
      .field("repetitions", c.measured.repetitions)
      .field("nvlink_line_bytes_per_s", c.nvlink_line_bytes_per_s)
      .field("nic_line_bytes_per_s", c.nic_line_bytes_per_s);
  optional("intra_node_busbw_bytes_per_s", c.intra_node_busbw_bytes_per_s);
  optional("inter_node_busbw_bytes_per_s", c.inter_node_busbw_bytes_per_s);
  optional("nvlink_efficiency", c.nvlink_efficiency);
  optional("network_efficiency", c.network_efficiency);
  j.field("base_latency_us", static_cast<double>(c.base_latency_ns) / 1e3);
  optional_us("nvlink_step_latency_us", c.nvlink_step_latency_ns);
  optional_us("net_step_latency_us", c.net_step_latency_ns);
  j.key("points").begin_array();
  for (const backend::LinkPoint& p : c.measured.points) {
    j.begin_object()
        .field("link", to_string(p.link))
        .field("op", models::to_string(p.op))
        .field("ranks", p.ranks)
        .field("bytes", p.bytes)
        .field("seconds", p.seconds)
        .field("algbw_bytes_per_s", p.algbw_bytes_per_s())
        .field("busbw_bytes_per_s", p.busbw_bytes_per_s())
        .end_object();
  }
  j.end_array();
  j.key("fits").begin_array();
  for (const LinkOpFit& f : c.fits) {
    j.begin_object()
        .field("link", to_string(f.link))
        .field("op", models::to_string(f.op))
        .field("ranks", f.ranks)
        .field("steps", f.steps)
        .field("latency_s", f.small.latency_s)
        .field("small_message_busbw_bytes_per_s", f.small.bus_bytes_per_s)
        .field("largest_bytes", f.largest_bytes)
        .field("busbw_bytes_per_s", f.large_busbw_bytes_per_s)
        .end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace megasim::scenarios
