#include "scenarios/cpu_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "models/plan.h"
#include "scenarios/device.h"
#include "scenarios/json_writer.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

template <typename Visit>
void for_each_op(const models::Workload& workload, Visit visit) {
  for (const models::StageProgram& stage : workload.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kCompute) continue;
      for (const models::Task::KernelRun& run : task.runs) {
        for (const models::LayerOp& op : workload.kernels[static_cast<std::size_t>(run.kernels)].ops)
          visit(op, run.repeat);
      }
    }
  }
}

double positive_time(double seconds, const char* what) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    throw sim::ConfigError("--backend", "cpu", fmt::format("a positive measured time for {} (got {})", what, seconds));
  }
  return seconds;
}

}  // namespace

std::vector<CpuOpMeasurement> plan_products(const models::Workload& workload) {
  std::vector<CpuOpMeasurement> out;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::size_t> index;
  for_each_op(workload, [&](const models::LayerOp& op, std::int32_t repeat) {
    if (op.kind != models::OpKind::kGemm && op.kind != models::OpKind::kAttention) return;
    const auto [it, added] = index.emplace(std::tuple{op.shape.m, op.shape.n, op.shape.k, op.shape.batch}, out.size());
    if (added) out.push_back(CpuOpMeasurement{op.shape, 0, 0, 0, 0});
    out[it->second].calls += repeat;
  });
  return out;
}

std::vector<CpuOpMeasurement> plan_memory_ops(const models::Workload& workload) {
  std::vector<CpuOpMeasurement> out;
  std::map<double, std::size_t> index;
  for_each_op(workload, [&](const models::LayerOp& op, std::int32_t repeat) {
    if (op.kind != models::OpKind::kElementwise && op.kind != models::OpKind::kNorm) return;
    const auto [it, added] = index.emplace(op.bytes, out.size());
    if (added) out.push_back(CpuOpMeasurement{{0, 0, 0, 0}, op.bytes, 0, 0, 0});
    out[it->second].calls += repeat;
  });
  return out;
}

std::vector<CpuCollectiveMeasurement> plan_collectives(const models::Workload& workload) {
  std::vector<CpuCollectiveMeasurement> out;
  std::map<std::tuple<models::GroupKind, models::CollectiveOp, double>, std::size_t> index;
  auto add = [&](models::GroupKind group, std::int64_t members, models::CollectiveOp op, double bytes,
                 std::int64_t calls) {
    const auto [it, added] = index.emplace(std::tuple{group, op, bytes}, out.size());
    if (added) out.push_back(CpuCollectiveMeasurement{group, members, op, bytes, 0, 0, 0});
    out[it->second].calls += calls;
  };
  for (const models::StageProgram& stage : workload.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind == models::TaskKind::kDpCollective && workload.plan.dp > 1) {
        add(models::GroupKind::kData, workload.plan.dp, task.op, task.bytes, 1);
      }
      if (task.kind != models::TaskKind::kCompute || workload.plan.tp <= 1) continue;
      for (const models::Task::KernelRun& run : task.runs) {
        for (const models::TpCollective& call :
             workload.kernels[static_cast<std::size_t>(run.kernels)].tp_collectives) {
          add(models::GroupKind::kTensor, workload.plan.tp, call.op, call.bytes,
              static_cast<std::int64_t>(run.repeat) * call.count);
        }
      }
    }
  }
  return out;
}

CpuCalibrationReport run_cpu_calibration(const Scenario& scenario, const CpuCalibrationProbe& probe) {
  if (scenario.plan.use_flash_attention) {
    throw sim::ConfigError("plan.use_flash_attention", "true",
                           "false for the cpu backend (it has no fused attention kernel to measure)");
  }
  const models::ResolvedPlan plan =
      models::resolve_plan(scenario.model, scenario.plan, scenario.cluster.gpus, scenario.cluster.gpus_per_server);
  const models::Workload workload = models::build_workload(scenario.model, plan);

  CpuCalibrationReport r;
  r.scenario = scenario.name;
  r.links = probe.links;
  // A measured time includes the fixed cost of an op, which the cost model adds as the launch
  // overhead: the rates (and so the points) are of the time without it, at least half the time.
  r.op_overhead_s = positive_time(probe.op_overhead_s(), "the op overhead");
  auto without_overhead = [&](double measured_s) { return std::max(measured_s - r.op_overhead_s, measured_s / 2); };
  r.products = plan_products(workload);
  for (CpuOpMeasurement& m : r.products) {
    m.measured_s = positive_time(probe.gemm_seconds(m.shape), "a GEMM");
    m.rate = models::gemm_flops(m.shape) / without_overhead(m.measured_s);
    r.peak_flops = std::max(r.peak_flops, m.rate);
  }
  r.memory_ops = plan_memory_ops(workload);
  double plan_bytes = 0;
  double plan_seconds = 0;
  for (CpuOpMeasurement& m : r.memory_ops) {
    m.measured_s = positive_time(probe.memory_op_seconds(m.bytes), "a memory-bound op");
    m.rate = m.bytes / without_overhead(m.measured_s);
    r.memory_bytes_per_s = std::max(r.memory_bytes_per_s, m.rate);
    plan_bytes += m.bytes * static_cast<double>(m.calls);
    plan_seconds += without_overhead(m.measured_s) * static_cast<double>(m.calls);
  }
  if (r.peak_flops <= 0 || plan_seconds <= 0) {
    throw sim::ConfigError("--backend", "cpu", "a plan with GEMMs and memory-bound ops to measure");
  }
  r.plan_memory_bytes_per_s = plan_bytes / plan_seconds;

  const CpuLinkMeasurement& l = r.links;
  // Links: the transfer bandwidth from the collectives that only copy (all-gather, broadcast,
  // all-to-all); a plan whose collectives all reduce also gets an all-gather of each one's size
  // measured. What a reducing collective takes beyond its transfer at that bandwidth is its
  // reduction: (n-1)/n of its bytes combined per member (models/collective.h).
  r.collectives = plan_collectives(workload);
  for (CpuCollectiveMeasurement& c : r.collectives) {
    c.measured_s = positive_time(probe.collective_seconds(c.group, c.op, c.bytes), "a collective");
    c.bus_bytes_per_s = c.bytes * models::bus_bandwidth_factor(c.op, c.members) / c.measured_s;
  }
  const auto reduces = [](models::CollectiveOp op) {
    return op == models::CollectiveOp::kAllReduce || op == models::CollectiveOp::kReduceScatter;
  };
  const bool any_copy =
      std::any_of(r.collectives.begin(), r.collectives.end(), [&](const auto& c) { return !reduces(c.op); });
  if (!any_copy) {
    for (const CpuCollectiveMeasurement& c : std::vector<CpuCollectiveMeasurement>(r.collectives)) {
      CpuCollectiveMeasurement copy = c;
      copy.op = models::CollectiveOp::kAllGather;
      copy.measured_s = positive_time(probe.collective_seconds(c.group, copy.op, c.bytes), "a collective");
      copy.bus_bytes_per_s = c.bytes * models::bus_bandwidth_factor(copy.op, c.members) / copy.measured_s;
      copy.calls = 0;  // measured for the link only; the plan does not run it
      r.link_probes.push_back(copy);
    }
  }
  double bus_bytes = 0;
  double bus_seconds = 0;
  for (const auto* rows : {&r.collectives, &r.link_probes}) {
    for (const CpuCollectiveMeasurement& c : *rows) {
      if (reduces(c.op)) continue;
      const double weight = static_cast<double>(std::max<std::int64_t>(1, c.calls));
      bus_bytes += c.bytes * models::bus_bandwidth_factor(c.op, c.members) * weight;
      bus_seconds += c.measured_s * weight;
    }
  }
  r.intra_node_bytes_per_s = bus_seconds > 0 ? bus_bytes / bus_seconds : l.p2p_bytes_per_s;
  if (!(r.intra_node_bytes_per_s > 0)) {
    throw sim::ConfigError("--backend", "cpu", "a job of 2 or more ranks, to measure the links between them");
  }
  double reduced_bytes = 0;
  double reduction_s = 0;
  for (const CpuCollectiveMeasurement& c : r.collectives) {
    if (!reduces(c.op)) continue;
    const double members = static_cast<double>(c.members);
    const double transfer_s = c.bytes * models::bus_bandwidth_factor(c.op, c.members) / r.intra_node_bytes_per_s;
    reduced_bytes += (members - 1) / members * c.bytes * static_cast<double>(c.calls);
    reduction_s += (c.measured_s - transfer_s) * static_cast<double>(c.calls);
  }
  // No time beyond the transfer: reductions are free at this resolution.
  r.reduction_bytes_per_s = reduction_s > 0 ? reduced_bytes / reduction_s : 0;

  r.device.name = probe.device;
  r.device.peak_bf16_dense_tflops = r.peak_flops / 1e12;
  r.device.hbm_tbytes_per_s = r.memory_bytes_per_s / 1e12;
  r.device.hbm_gbytes = probe.memory_gbytes_per_rank;
  r.device.nvlink_total_gbytes_per_s = 2 * r.intra_node_bytes_per_s / 1e9;

  r.compute = calibrated_device_defaults();
  r.compute.memory_efficiency = r.plan_memory_bytes_per_s / r.memory_bytes_per_s;
  for (const CpuOpMeasurement& m : r.memory_ops)
    r.compute.memory_points.push_back({m.bytes, m.rate / r.memory_bytes_per_s});
  std::sort(r.compute.memory_points.begin(), r.compute.memory_points.end(),
            [](const models::MemoryPoint& a, const models::MemoryPoint& b) { return a.bytes < b.bytes; });
  r.compute.launch_overhead_ns = std::llround(r.op_overhead_s * 1e9);
  // One point per (m, n, k) (a point has no batch): the call-weighted efficiency of its products.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::pair<double, double>> points;  // flops, s
  for (const CpuOpMeasurement& m : r.products) {
    auto& [flops, seconds] = points[std::tuple{m.shape.m, m.shape.n, m.shape.k}];
    flops += models::gemm_flops(m.shape) * static_cast<double>(m.calls);
    seconds += models::gemm_flops(m.shape) / m.rate * static_cast<double>(m.calls);
  }
  for (const auto& [shape, totals] : points) {
    const auto [m, n_, k] = shape;
    r.compute.gemm_points.push_back({m, n_, k, std::min(1.0, totals.first / totals.second / r.peak_flops)});
  }
  models::validate(r.compute);

  const int ranks = std::max(2, l.ranks);
  const double small_reduction =
      r.reduction_bytes_per_s > 0 ? (ranks - 1.0) / ranks * l.allreduce_small_bytes / r.reduction_bytes_per_s : 0;
  const double small_wire = l.allreduce_small_bytes *
                                models::bus_bandwidth_factor(models::CollectiveOp::kAllReduce, ranks) /
                                r.intra_node_bytes_per_s +
                            small_reduction;
  r.collective.base_latency_ns = std::max<sim::SimTime>(0, std::llround((l.allreduce_small_s - small_wire) * 1e9));
  r.collective.nvlink_step_latency_ns = std::llround(l.p2p_latency_s * 1e9);
  r.collective.net_step_latency_ns = r.collective.nvlink_step_latency_ns;
  r.collective.reduction_gbytes_per_s = r.reduction_bytes_per_s / 1e9;
  return r;
}

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
      "intra_node_gbytes_per_s = {:.6g}\n\n"
      "[compute]\n"
      "best_gemm_efficiency = 1.0\n"
      "gemm_k_overhead = 0\n"
      "memory_efficiency = {:.6g}\n"
      "launch_overhead_us = {:.4f}\n"
      "gemm_points = [\n",
      r.links.ranks, r.scenario, r.collectives.size(), r.links.p2p_bytes_per_s / 1e9, r.links.p2p_latency_s * 1e6,
      r.device.name, r.device.peak_bf16_dense_tflops, r.device.hbm_tbytes_per_s, r.device.hbm_gbytes,
      r.device.nvlink_total_gbytes_per_s / 2, r.compute.memory_efficiency,
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
      "nvlink_efficiency = 1.0\n\n"
      "[collective]\n"
      "base_latency_us = {:.3f}\n"
      "nvlink_step_latency_us = {:.3f}\n"
      "net_step_latency_us = {:.3f}\n"
      "reduction_gbytes_per_s = {:.6g}\n",
      static_cast<double>(r.collective.base_latency_ns) / 1e3,
      static_cast<double>(r.collective.nvlink_step_latency_ns) / 1e3,
      static_cast<double>(r.collective.net_step_latency_ns) / 1e3, r.collective.reduction_gbytes_per_s);
  return out;
}

std::string to_text(const CpuCalibrationReport& r) {
  std::string out = fmt::format("calibration of the cpu backend on {} ({} ranks), ops of '{}'\n", r.device.name,
                                r.links.ranks, r.scenario);
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
  if (!r.collectives.empty()) {
    out += fmt::format("{:<6} {:<16} {:>14} {:>7} {:>11} {:>11}\n", "group", "collective", "bytes", "calls",
                       "time (ms)", "bus GB/s");
    for (const CpuCollectiveMeasurement& c : r.collectives) {
      out += fmt::format("{:<6} {:<16} {:>14.0f} {:>7} {:>11.4f} {:>11.2f}\n",
                         c.group == models::GroupKind::kData ? "dp" : "tp", models::to_string(c.op), c.bytes, c.calls,
                         c.measured_s * 1e3, c.bus_bytes_per_s / 1e9);
    }
  }
  out += fmt::format(
      "peak (fastest product)     {:.2f} GFLOP/s\n"
      "memory-bound ops           fastest {:.2f} GB/s, plan-weighted {:.2f} GB/s\n"
      "op overhead                {:.3f} us\n"
      "point-to-point             {:.2f} GB/s, {:.2f} us\n"
      "small all-reduce           {:.0f} B in {:.1f} us\n"
      "intra-node bandwidth       {:.2f} GB/s ({})\n"
      "reductions                 {}\n",
      r.peak_flops / 1e9, r.memory_bytes_per_s / 1e9, r.plan_memory_bytes_per_s / 1e9, r.op_overhead_s * 1e6,
      r.links.p2p_bytes_per_s / 1e9, r.links.p2p_latency_s * 1e6, r.links.allreduce_small_bytes,
      r.links.allreduce_small_s * 1e6, r.intra_node_bytes_per_s / 1e9,
      r.collectives.empty() ? "point-to-point" : "the plan's copying collectives",
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
      .field("reduction_bytes_per_s", r.reduction_bytes_per_s);
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
  j.key("collectives").begin_array();
  for (const CpuCollectiveMeasurement& c : r.collectives) {
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
  j.key("memory_ops").begin_array();
  for (const CpuOpMeasurement& m : r.memory_ops) {
    j.begin_object().field("bytes", m.bytes).field("calls", m.calls).field("seconds", m.measured_s).end_object();
  }
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace megasim::scenarios
