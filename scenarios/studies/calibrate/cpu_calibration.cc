#include "scenarios/studies/calibrate/cpu_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "models/plan.h"
#include "scenarios/config/device.h"
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

bool reduces(models::CollectiveOp op) {
  return op == models::CollectiveOp::kAllReduce || op == models::CollectiveOp::kReduceScatter;
}

void measure_row(CpuCollectiveMeasurement& c, double seconds) {
  c.measured_s = positive_time(seconds, "a collective");
  c.bus_bytes_per_s = c.bytes * models::bus_bandwidth_factor(c.op, c.members) / c.measured_s;
}

using MeasureRow = std::function<double(const CpuCollectiveMeasurement&, models::CollectiveOp)>;

// An all-gather of each row's size, measured for the link alone (calls 0), when every row reduces.
std::vector<CpuCollectiveMeasurement> copy_probes(const std::vector<CpuCollectiveMeasurement>& rows,
                                                  const MeasureRow& measure) {
  std::vector<CpuCollectiveMeasurement> out;
  if (std::any_of(rows.begin(), rows.end(), [](const auto& c) { return !reduces(c.op); })) return out;
  for (const CpuCollectiveMeasurement& c : rows) {
    CpuCollectiveMeasurement copy = c;
    copy.op = models::CollectiveOp::kAllGather;
    copy.calls = 0;  // the plan does not run it
    measure_row(copy, measure(c, copy.op));
    out.push_back(copy);
  }
  return out;
}

// The plan's distinct collectives by (op, bytes), calls summed over groups, over a host group of
// `members` ranks.
std::vector<CpuCollectiveMeasurement> host_rows(const std::vector<CpuCollectiveMeasurement>& plan, int members,
                                                const MeasureRow& measure) {
  std::vector<CpuCollectiveMeasurement> out;
  for (const CpuCollectiveMeasurement& c : plan) {
    const auto same = [&](const CpuCollectiveMeasurement& o) { return o.op == c.op && o.bytes == c.bytes; };
    const auto found = std::find_if(out.begin(), out.end(), same);
    if (found != out.end()) {
      found->calls += c.calls;
      continue;
    }
    CpuCollectiveMeasurement row = c;
    row.members = members;
    out.push_back(row);
  }
  for (CpuCollectiveMeasurement& row : out) measure_row(row, measure(row, row.op));
  return out;
}

}  // namespace

CpuLinkRates cpu_link_rates(const std::vector<CpuCollectiveMeasurement>& rows,
                            const std::vector<CpuCollectiveMeasurement>& probes, double fallback_bytes_per_s) {
  double bus_bytes = 0;
  double bus_seconds = 0;
  for (const auto* list : {&rows, &probes}) {
    for (const CpuCollectiveMeasurement& c : *list) {
      if (reduces(c.op)) continue;
      const double weight = static_cast<double>(std::max<std::int64_t>(1, c.calls));
      bus_bytes += c.bytes * models::bus_bandwidth_factor(c.op, c.members) * weight;
      bus_seconds += c.measured_s * weight;
    }
  }
  CpuLinkRates out;
  out.bus_bytes_per_s = bus_seconds > 0 ? bus_bytes / bus_seconds : fallback_bytes_per_s;
  if (!(out.bus_bytes_per_s > 0)) return out;
  double reduced_bytes = 0;
  double reduction_s = 0;
  for (const CpuCollectiveMeasurement& c : rows) {
    if (!reduces(c.op)) continue;
    const double members = static_cast<double>(c.members);
    const double transfer_s = c.bytes * models::bus_bandwidth_factor(c.op, c.members) / out.bus_bytes_per_s;
    reduced_bytes += (members - 1) / members * c.bytes * static_cast<double>(c.calls);
    reduction_s += (c.measured_s - transfer_s) * static_cast<double>(c.calls);
  }
  // No time beyond the transfer: reductions are free at this resolution.
  out.reduction_bytes_per_s = reduction_s > 0 ? reduced_bytes / reduction_s : 0;
  return out;
}

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
      if (task.kind == models::TaskKind::kDpCollective && workload.plan.replicas() > 1) {
        add(models::GroupKind::kData, workload.plan.replicas(), task.op, task.bytes, 1);
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

CpuCalibrationReport run_cpu_calibration(const Scenario& scenario, const backend::CpuProbe& probe) {
  if (scenario.plan.use_flash_attention) {
    throw sim::ConfigError("plan.use_flash_attention", "true",
                           "false for the cpu backend (it has no fused attention kernel to measure)");
  }
  if (scenario.plan.attention_kernel != models::AttentionKernel::kUnfused) {
    throw sim::ConfigError("plan.attention_kernel", std::string(models::to_string(scenario.plan.attention_kernel)),
                           "unfused for the cpu backend (it has no fused attention kernel to measure)");
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

  const backend::CpuLinkMeasurement& l = r.links;
  // Links: the transfer bandwidth from the collectives that only copy (all-gather, broadcast,
  // all-to-all); a plan whose collectives all reduce also gets an all-gather of each one's size
  // measured. What a reducing collective takes beyond its transfer at that bandwidth is its
  // reduction: (n-1)/n of its bytes combined per member (models/collective.h).
  r.collectives = plan_collectives(workload);
  for (CpuCollectiveMeasurement& c : r.collectives) {
    measure_row(c, probe.collective_seconds(c.group, c.op, c.bytes));
  }
  CpuLinkRates intra;
  if (l.hosts < 2) {
    r.link_probes = copy_probes(r.collectives, [&](const CpuCollectiveMeasurement& c, models::CollectiveOp op) {
      return probe.collective_seconds(c.group, op, c.bytes);
    });
    intra = cpu_link_rates(r.collectives, r.link_probes, l.p2p_bytes_per_s);
  } else {
    MEGASIM_ASSERT(probe.host_collective_seconds != nullptr, "a multi-host job's probe measures host groups");
    auto over = [&](backend::HostLink link) {
      return [&probe, link](const CpuCollectiveMeasurement& c, models::CollectiveOp op) {
        return probe.host_collective_seconds(link, op, c.bytes);
      };
    };
    r.inter_node = host_rows(r.collectives, l.hosts, over(backend::HostLink::kInterNode));
    r.inter_node_probes = copy_probes(r.inter_node, over(backend::HostLink::kInterNode));
    const CpuLinkRates inter = cpu_link_rates(r.inter_node, r.inter_node_probes, l.inter_p2p_bytes_per_s);
    r.inter_node_bytes_per_s = inter.bus_bytes_per_s;
    intra = inter;  // one rank per host: no intra-node link, the inter-node figures stand for it
    if (l.ranks_per_host >= 2) {
      r.intra_node = host_rows(r.collectives, l.ranks_per_host, over(backend::HostLink::kIntraNode));
      r.link_probes = copy_probes(r.intra_node, over(backend::HostLink::kIntraNode));
      intra = cpu_link_rates(r.intra_node, r.link_probes, l.p2p_bytes_per_s);
    }
  }
  r.intra_node_bytes_per_s = intra.bus_bytes_per_s;
  if (!(r.intra_node_bytes_per_s > 0)) {
    throw sim::ConfigError("--backend", "cpu", "a job of 2 or more ranks, to measure the links between them");
  }
  r.reduction_bytes_per_s = intra.reduction_bytes_per_s;

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

  const int ranks = std::max(2, l.allreduce_small_ranks > 0 ? l.allreduce_small_ranks : l.ranks);
  const double small_reduction =
      r.reduction_bytes_per_s > 0 ? (ranks - 1.0) / ranks * l.allreduce_small_bytes / r.reduction_bytes_per_s : 0;
  const double small_wire = l.allreduce_small_bytes *
                                models::bus_bandwidth_factor(models::CollectiveOp::kAllReduce, ranks) /
                                r.intra_node_bytes_per_s +
                            small_reduction;
  r.collective.base_latency_ns = std::max<sim::SimTime>(0, std::llround((l.allreduce_small_s - small_wire) * 1e9));
  // A step between two ranks of a host, else (one rank per host) between two hosts.
  r.collective.nvlink_step_latency_ns =
      std::llround((l.p2p_latency_s > 0 || l.hosts < 2 ? l.p2p_latency_s : l.inter_p2p_latency_s) * 1e9);
  r.collective.net_step_latency_ns =
      l.hosts >= 2 ? std::llround(l.inter_p2p_latency_s * 1e9) : r.collective.nvlink_step_latency_ns;
  r.collective.reduction_gbytes_per_s = r.reduction_bytes_per_s / 1e9;
  return r;
}

}  // namespace megasim::scenarios
