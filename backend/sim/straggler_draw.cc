#include "backend/sim/straggler_draw.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/layer_ops.h"
#include "sim/error.h"
#include "sim/rng.h"

namespace megasim::backend {
namespace {}  // namespace

std::vector<double> drift_rates_per_hour(const models::StragglerParams& p, std::int64_t servers,
                                         const sim::RngStreams& rng) {
  std::vector<double> out(static_cast<std::size_t>(servers), 0.0);
  if (!p.drifts()) return out;
  sim::Rng draw = rng.stream("stragglers.drift");
  const auto [mu, sigma] = models::lognormal_parameters(p.drift_per_hour, p.drift_cv);
  for (double& rate : out) {
    // Two draws per server whatever the outcome, as for slow hosts.
    const bool drifts = draw.uniform01() < p.drift_host_fraction;
    const double r = draw.lognormal(mu, sigma);
    if (drifts) rate = p.drift_cv > 0 ? r : p.drift_per_hour;  // exactly the mean without spread
  }
  return out;
}

namespace {

std::vector<double> host_factors(const models::StragglerParams& p, std::int64_t servers, const sim::RngStreams& rng) {
  std::vector<double> out(static_cast<std::size_t>(servers), 1.0);
  if (p.slow_host_fraction > 0) {
    sim::Rng draw = rng.stream("stragglers.hosts");
    for (double& factor : out) {
      // Two draws per server whatever the outcome, so one server's fate does not shift the next's.
      const bool slow = draw.uniform01() < p.slow_host_fraction;
      const double f = draw.normal(p.slow_host_factor, p.slow_host_factor_stddev);
      if (slow) factor = std::max(1.0, f);
    }
  }
  if (p.drifts() && p.uptime_h > 0) {
    const std::vector<double> rates = drift_rates_per_hour(p, servers, rng);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] *= 1 + rates[s] * p.uptime_h;
  }
  for (const auto& [server, factor] : models::parse_factor_list(p.slow_hosts, "stragglers.slow_hosts")) {
    if (server >= servers) {
      throw sim::ConfigError("stragglers.slow_hosts", std::to_string(server),
                             "server ids of the cluster, 0 to " + std::to_string(servers - 1));
    }
    out[static_cast<std::size_t>(server)] *= factor;
  }
  return out;
}

// Per GPU: its server's factor times its own from the slow_gpus list.
std::vector<double> gpu_factors(const models::StragglerParams& p, const std::vector<double>& host,
                                const topo::Topology& topology) {
  const std::int64_t gpus = topology.num_gpus();
  std::vector<double> out(static_cast<std::size_t>(gpus), 1.0);
  for (std::int64_t g = 0; g < gpus; ++g) {
    const topo::GpuId gpu(static_cast<std::int32_t>(g));
    out[static_cast<std::size_t>(g)] = host[topology.server_of(gpu).index()];
  }
  for (const auto& [gpu, factor] : models::parse_factor_list(p.slow_gpus, "stragglers.slow_gpus")) {
    if (gpu >= gpus) {
      throw sim::ConfigError("stragglers.slow_gpus", std::to_string(gpu),
                             "GPU ids of the cluster, 0 to " + std::to_string(gpus - 1));
    }
    out[static_cast<std::size_t>(gpu)] *= factor;
  }
  return out;
}

}  // namespace

std::vector<std::vector<double>> attention_shares(const models::Workload& workload) {
  std::vector<double> list_total(workload.kernels.size(), 0);
  std::vector<double> list_attention(workload.kernels.size(), 0);
  for (std::size_t k = 0; k < workload.kernels.size(); ++k) {
    for (const models::LayerOp& op : workload.kernels[k].ops) {
      list_total[k] += op.executed_flops;
      if (op.kind == models::OpKind::kAttention) list_attention[k] += op.executed_flops;
    }
  }
  std::vector<std::vector<double>> out;
  for (const models::StageProgram& stage : workload.stages) {
    std::vector<double>& shares = out.emplace_back(stage.tasks.size(), 0.0);
    for (std::size_t t = 0; t < stage.tasks.size(); ++t) {
      double total = 0;
      double attention = 0;
      for (const models::Task::KernelRun& run : stage.tasks[t].runs) {
        const auto k = static_cast<std::size_t>(run.kernels);
        total += run.repeat * list_total[k];
        attention += run.repeat * list_attention[k];
      }
      shares[t] = total > 0 ? attention / total : 0.0;
    }
  }
  return out;
}

StragglerDraw draw_stragglers(const models::StragglerParams& p, const models::Workload& workload,
                              const topo::Topology& topology, std::uint64_t seed) {
  models::validate(p);
  const sim::RngStreams rng(seed);
  StragglerDraw draw;
  draw.host_slowdown = host_factors(p, topology.num_servers(), rng);
  draw.gpu_slowdown = gpu_factors(p, draw.host_slowdown, topology);
  if (p.drifts() && p.uptime_h > 0) {
    models::StragglerParams fresh = p;
    fresh.uptime_h = 0;
    draw.gpu_slowdown_after_restart = gpu_factors(p, host_factors(fresh, topology.num_servers(), rng), topology);
  }
  const std::int64_t gpus = topology.num_gpus();

  for (const auto& [gpu, factor] : models::parse_factor_list(p.slow_nics, "stragglers.slow_nics")) {
    if (gpu >= gpus) {
      throw sim::ConfigError("stragglers.slow_nics", std::to_string(gpu),
                             "GPU ids of the cluster (a GPU's NIC), 0 to " + std::to_string(gpus - 1));
    }
    const topo::GpuId g(static_cast<std::int32_t>(gpu));
    draw.degraded_links.emplace_back(topology.nic_up(g), 1.0 / factor);
    draw.degraded_links.emplace_back(topology.nic_down(g), 1.0 / factor);
  }
  const auto links = static_cast<std::int64_t>(topology.num_links());
  for (const auto& [link, factor] : models::parse_factor_list(p.slow_links, "stragglers.slow_links")) {
    if (link >= links) {
      throw sim::ConfigError("stragglers.slow_links", std::to_string(link),
                             "link ids of the cluster, 0 to " + std::to_string(links - 1));
    }
    draw.degraded_links.emplace_back(topo::LinkId(static_cast<std::int32_t>(link)), 1.0 / factor);
  }

  const models::ParallelLayout layout = workload.plan.layout();
  const std::int64_t units = layout.pipeline * layout.data;
  if (p.jitter_cv > 0 || p.seq_length_cv > 0) {
    // Sequence lengths: one ratio per (replica, micro-batch), shared by every stage of the replica.
    const std::int64_t microbatches = std::max<std::int64_t>(1, workload.plan.num_microbatches);
    std::vector<double> ratio(static_cast<std::size_t>(layout.data * microbatches), 1.0);
    if (p.seq_length_cv > 0) {
      sim::Rng draw_seq = rng.stream("stragglers.seq_length");
      const auto [mu, sigma] = models::lognormal_parameters(1.0, p.seq_length_cv);
      for (double& r : ratio) r = draw_seq.lognormal(mu, sigma);
    }
    const std::vector<std::vector<double>> shares = attention_shares(workload);
    sim::Rng jitter = rng.stream("stragglers.jitter");
    const auto [jmu, jsigma] = models::lognormal_parameters(1.0, p.jitter_cv);
    draw.task_scale.resize(static_cast<std::size_t>(units));
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t stage = u / layout.data;
      const std::int64_t replica = u % layout.data;
      const models::StageProgram& program = workload.stages[static_cast<std::size_t>(stage)];
      std::vector<float>& scale = draw.task_scale[static_cast<std::size_t>(u)];
      scale.assign(program.tasks.size(), 1.0f);
      for (std::size_t t = 0; t < program.tasks.size(); ++t) {
        const models::Task& task = program.tasks[t];
        if (task.kind != models::TaskKind::kCompute) continue;
        double f = p.jitter_cv > 0 ? jitter.lognormal(jmu, jsigma) : 1.0;
        if (p.seq_length_cv > 0 && task.microbatch >= 0) {
          const std::int64_t mb = std::min<std::int64_t>(task.microbatch, microbatches - 1);
          f *= models::sequence_length_factor(ratio[static_cast<std::size_t>(replica * microbatches + mb)],
                                              shares[static_cast<std::size_t>(stage)][t]);
        }
        scale[t] = static_cast<float>(f);
      }
    }
  }
  if (p.gc_period_s > 0 && p.gc_pause_s > 0) {
    draw.gc_period = sim::from_seconds(p.gc_period_s);
    draw.gc_pause = sim::from_seconds(p.gc_pause_s);
    if (p.gc_synchronized) {
      draw.gc_phase.assign(static_cast<std::size_t>(units), 0);  // one phase per unit: all at once
    } else {
      // Each rank's process collects on its own phase, and its TP group waits for each of them.
      if (static_cast<double>(layout.tensor) * p.gc_pause_s >= p.gc_period_s) {
        throw sim::ConfigError(
            "stragglers.gc_pause_s", fmt::format("{}", p.gc_pause_s),
            fmt::format("less than gc_period_s / TP = {} s: unplanned, each of a TP group's {} ranks pauses on its "
                        "own phase and the group waits for each, so longer pauses could leave it no time to compute",
                        p.gc_period_s / static_cast<double>(layout.tensor), layout.tensor));
      }
      draw.gc_phase.assign(static_cast<std::size_t>(units * layout.tensor), 0);
      sim::Rng phases = rng.stream("stragglers.gc");
      for (sim::SimTime& phase : draw.gc_phase) {
        phase = static_cast<sim::SimTime>(phases.uniform_int(static_cast<std::uint64_t>(draw.gc_period)));
      }
    }
  }
  return draw;
}

void apply(const StragglerDraw& draw, IterationInputs& inputs) {
  const bool slowed = std::any_of(draw.gpu_slowdown.begin(), draw.gpu_slowdown.end(), [](double f) { return f > 1; });
  inputs.gpu_slowdown = slowed ? draw.gpu_slowdown : std::vector<double>{};
  inputs.task_scale = draw.task_scale;
  inputs.gc_period = draw.gc_period;
  inputs.gc_pause = draw.gc_pause;
  inputs.gc_phase = draw.gc_phase;
  inputs.degraded_links = draw.degraded_links;
}

std::vector<double> without_hosts(const StragglerDraw& draw, const topo::Topology& topology,
                                  const std::vector<std::int64_t>& replaced) {
  std::vector<double> out = draw.gpu_slowdown;
  for (std::size_t g = 0; g < out.size(); ++g) {
    const auto server =
        static_cast<std::int64_t>(topology.server_of(topo::GpuId(static_cast<std::int32_t>(g))).index());
    if (std::find(replaced.begin(), replaced.end(), server) != replaced.end()) out[g] = 1.0;
  }
  return out;
}

}  // namespace megasim::backend
