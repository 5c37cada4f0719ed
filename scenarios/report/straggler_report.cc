#include "scenarios/report/straggler_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include "scenarios/config/plural.h"
#include "scenarios/report/iteration_report.h"
#include "sim/time.h"

namespace megasim::scenarios {
namespace {

double simulate_s(const backend::IterationInputs& inputs) {
  return sim::to_seconds(backend::simulate_iteration(inputs).iteration_time);
}

// Per unit, the compute multiple of each task: the unit's slowdown (its slowest GPU) times the
// task's scale.
std::vector<std::vector<double>> unit_multiples(const backend::IterationInputs& in) {
  const models::Workload& w = *in.workload;
  const models::ParallelLayout layout = w.plan.layout();
  const std::int64_t units = layout.pipeline * layout.data;
  std::vector<std::vector<double>> out(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) {
    double slowdown = 1.0;
    for (std::int64_t t = 0; t < layout.tensor; ++t) {
      const topo::GpuId g = in.placement[static_cast<std::size_t>(u * layout.tensor + t)];
      if (!in.gpu_slowdown.empty()) slowdown = std::max(slowdown, in.gpu_slowdown[g.index()]);
    }
    const std::size_t tasks = w.stages[static_cast<std::size_t>(u / layout.data)].tasks.size();
    std::vector<double>& m = out[static_cast<std::size_t>(u)];
    m.assign(tasks, slowdown);
    if (!in.task_scale.empty() && !in.task_scale[static_cast<std::size_t>(u)].empty()) {
      for (std::size_t i = 0; i < tasks; ++i)
        m[i] *= static_cast<double>(in.task_scale[static_cast<std::size_t>(u)][i]);
    }
  }
  return out;
}

backend::IterationInputs group_mean_inputs(const backend::IterationInputs& in) {
  const models::ParallelLayout layout = in.workload->plan.layout();
  const std::vector<std::vector<double>> multiples = unit_multiples(in);
  backend::IterationInputs out = in;
  out.gpu_slowdown.clear();
  out.task_scale.assign(multiples.size(), {});
  for (std::int64_t stage = 0; stage < layout.pipeline; ++stage) {
    const auto first = static_cast<std::size_t>(stage * layout.data);
    const std::size_t tasks = multiples[first].size();
    std::vector<float> mean(tasks, 0.0f);
    for (std::size_t i = 0; i < tasks; ++i) {
      double sum = 0;
      for (std::int64_t r = 0; r < layout.data; ++r) sum += multiples[first + static_cast<std::size_t>(r)][i];
      mean[i] = static_cast<float>(sum / static_cast<double>(layout.data));
    }
    for (std::int64_t r = 0; r < layout.data; ++r) out.task_scale[first + static_cast<std::size_t>(r)] = mean;
  }
  return out;
}

// Per stage, the mean over its units of their compute seconds.
std::vector<double> stage_compute_s(const models::Workload& w, const backend::Trace& trace) {
  std::vector<double> sum(w.stages.size(), 0);
  std::vector<int> units(w.stages.size(), 0);
  for (const backend::TraceUnit& unit : trace.units) {
    const auto stage = static_cast<std::size_t>(unit.stage);
    const auto& tasks = w.stages[stage].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind == models::TaskKind::kCompute) {
        sum[stage] += sim::to_seconds(unit.records[i].end - unit.records[i].start);
      }
    }
    ++units[stage];
  }
  for (std::size_t s = 0; s < sum.size(); ++s) sum[s] /= std::max(1, units[s]);
  return sum;
}

// `in` with the last stage's compute scaled to the mean of the other stages' (measured on the
// nominal trace): its units' task scales multiplied by that ratio.
backend::IterationInputs balanced_last_stage(const backend::IterationInputs& in, const backend::Trace& nominal,
                                             double& ratio) {
  const models::Workload& w = *in.workload;
  const models::ParallelLayout layout = w.plan.layout();
  const std::vector<double> compute = stage_compute_s(w, nominal);
  double others = 0;
  for (std::size_t s = 0; s + 1 < compute.size(); ++s) others += compute[s];
  others /= static_cast<double>(compute.size() - 1);
  ratio = compute.back() > 0 ? others / compute.back() : 1.0;
  backend::IterationInputs out = in;
  const auto units = static_cast<std::size_t>(layout.pipeline * layout.data);
  if (out.task_scale.empty()) out.task_scale.resize(units);
  const std::size_t last = w.stages.size() - 1;
  for (std::int64_t r = 0; r < layout.data; ++r) {
    std::vector<float>& scale =
        out.task_scale[last * static_cast<std::size_t>(layout.data) + static_cast<std::size_t>(r)];
    if (scale.empty()) scale.assign(w.stages[last].tasks.size(), 1.0f);
    for (float& f : scale) f = static_cast<float>(static_cast<double>(f) * ratio);
  }
  return out;
}

// Compute seconds per task category, summed over units.
std::map<std::string, double> compute_by_category(const models::Workload& w, const backend::Trace& trace) {
  std::map<std::string, double> out;
  for (const backend::TraceUnit& unit : trace.units) {
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kCompute) continue;
      out[std::string(models::to_string(tasks[i].category))] +=
          sim::to_seconds(unit.records[i].end - unit.records[i].start);
    }
  }
  return out;
}

}  // namespace

StragglerReport analyse_stragglers(const models::StragglerParams& params, const backend::StragglerDraw& draw,
                                   const backend::IterationInputs& inputs, const backend::Trace& trace) {
  const models::Workload& w = *inputs.workload;
  const topo::Topology& topology = *inputs.topology;
  StragglerReport report;
  report.iteration_time_s = sim::to_seconds(trace.iteration_time);

  std::vector<std::pair<std::int64_t, double>> slow;
  for (std::size_t s = 0; s < draw.host_slowdown.size(); ++s) {
    if (draw.host_slowdown[s] > 1) slow.emplace_back(static_cast<std::int64_t>(s), draw.host_slowdown[s]);
  }
  std::stable_sort(slow.begin(), slow.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  report.slow_hosts = static_cast<std::int64_t>(slow.size());
  report.slowest_hosts.assign(slow.begin(),
                              slow.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(8, slow.size())));

  std::set<std::int64_t> critical;
  const std::int64_t tp = w.plan.tp;
  for (const TaskRef& ref : critical_chain(w, trace)) {
    for (std::int64_t t = 0; t < tp; ++t) {
      const topo::GpuId g = inputs.placement[static_cast<std::size_t>(static_cast<std::int64_t>(ref.unit) * tp + t)];
      critical.insert(static_cast<std::int64_t>(topology.server_of(g).index()));
    }
  }
  report.critical_hosts.assign(critical.begin(), critical.end());

  backend::IterationInputs nominal = inputs;
  nominal.gpu_slowdown.clear();
  nominal.task_scale.clear();
  nominal.gc_period = 0;
  nominal.gc_phase.clear();
  nominal.degraded_links.clear();
  const auto k = static_cast<std::size_t>(std::min<std::int64_t>(params.whatif_replaced_hosts, report.slow_hosts));
  std::vector<std::int64_t> replaced;
  for (std::size_t i = 0; i < k; ++i) replaced.push_back(slow[i].first);
  backend::IterationInputs healthier = inputs;
  healthier.gpu_slowdown = backend::without_hosts(draw, topology, replaced);
  const backend::IterationInputs group_mean = group_mean_inputs(inputs);
  // The three simulations are independent (each its own executor over shared read-only inputs):
  // two run on other threads. Each result is what it would be alone, so the report is deterministic.
  auto mean_s = std::async(std::launch::async, [&group_mean] { return simulate_s(group_mean); });
  auto healthier_s = std::async(std::launch::async, [&healthier] { return simulate_s(healthier); });
  const backend::Trace nominal_trace = backend::simulate_iteration(nominal);
  report.whatifs.push_back({"no_stragglers", "every GPU and link at nominal speed, no jitter, pauses or imbalance",
                            sim::to_seconds(nominal_trace.iteration_time)});
  report.whatifs.push_back({"group_mean_compute",
                            "every rank at the mean compute of its data-parallel peers (same stage), pauses kept",
                            mean_s.get()});
  report.whatifs.push_back({"replace_slowest_hosts",
                            fmt::format("the {} replaced by healthy spares", counted(replaced.size(), "slowest host")),
                            healthier_s.get()});
  if (!draw.gpu_slowdown_after_restart.empty()) {
    backend::IterationInputs restarted = inputs;
    restarted.gpu_slowdown = draw.gpu_slowdown_after_restart;
    report.whatifs.push_back({"restart",
                              fmt::format("the job restarted: drift reset after {} h of uptime", params.uptime_h),
                              simulate_s(restarted)});
  }
  if (w.stages.size() > 1) {
    double ratio = 1;
    const backend::IterationInputs balanced = balanced_last_stage(inputs, nominal_trace, ratio);
    report.whatifs.push_back(
        {"balanced_last_stage",
         fmt::format("the last stage's compute x{:.3f}, the mean of the other stages' (embedding, logits and loss "
                     "spread evenly)",
                     ratio),
         simulate_s(balanced)});
  }

  const std::map<std::string, double> with = compute_by_category(w, trace);
  const std::map<std::string, double> without = compute_by_category(w, nominal_trace);
  for (const auto& [category, seconds] : with) {
    const auto it = without.find(category);
    report.added_compute_s.emplace_back(category, seconds - (it == without.end() ? 0.0 : it->second));
  }
  return report;
}

std::string to_text(const StragglerReport& r) {
  std::string out = fmt::format("stragglers: {}", counted(r.slow_hosts, "slow host"));
  for (const auto& [server, factor] : r.slowest_hosts) out += fmt::format(", server {} x{:.3f}", server, factor);
  const auto listed = static_cast<std::int64_t>(r.slowest_hosts.size());
  if (r.slow_hosts > listed) out += fmt::format(" and {} more", r.slow_hosts - listed);
  out += fmt::format("; {} on the critical path\n", counted(r.critical_hosts.size(), "host"));
  for (const StragglerWhatIf& w : r.whatifs) {
    out += fmt::format("  what if {:<22} {:.4f} s ({:+.2f}%): {}\n", w.name, w.iteration_time_s,
                       100 * (w.iteration_time_s / r.iteration_time_s - 1), w.description);
  }
  out += "  compute added by op type:";
  for (const auto& [category, seconds] : r.added_compute_s) out += fmt::format(" {} {:+.4f} s", category, seconds);
  return out + "\n";
}

void write_whatifs(JsonWriter& w, const std::vector<StragglerWhatIf>& whatifs, double reference_s) {
  w.begin_array();
  for (const StragglerWhatIf& x : whatifs) {
    w.begin_object()
        .field("name", x.name)
        .field("description", x.description)
        .field("iteration_time_s", x.iteration_time_s)
        .field("saving_percent", 100 * (1 - x.iteration_time_s / reference_s))
        .end_object();
  }
  w.end_array();
}

void write_json(JsonWriter& w, const StragglerReport& r) {
  w.begin_object();
  w.field("iteration_time_s", r.iteration_time_s).field("slow_hosts", r.slow_hosts);
  w.key("slowest_hosts").begin_array();
  for (const auto& [server, factor] : r.slowest_hosts) {
    w.begin_object().field("server", server).field("factor", factor).end_object();
  }
  w.end_array();
  w.key("critical_hosts").begin_array();
  for (const std::int64_t server : r.critical_hosts) w.value(server);
  w.end_array();
  w.key("whatif");
  write_whatifs(w, r.whatifs, r.iteration_time_s);
  w.key("added_compute_s").begin_object();
  for (const auto& [category, seconds] : r.added_compute_s) w.field(category, seconds);
  w.end_object();
  w.end_object();
}

}  // namespace megasim::scenarios
