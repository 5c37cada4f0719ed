#include "scenarios/report/iteration_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "models/flops.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/report/report_json.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr double kGB = 1e9;

RankBreakdown weighted_mean(const backend::Trace& trace, const std::vector<RankBreakdown>& by_unit) {
  RankBreakdown mean;
  double weights = 0;
  for (std::size_t u = 0; u < by_unit.size(); ++u) {
    const double w = static_cast<double>(trace.units[u].ranks.size());
    const RankBreakdown& b = by_unit[u];
    mean.compute_s += w * b.compute_s;
    mean.tp_exposed_s += w * b.tp_exposed_s;
    mean.pp_exposed_s += w * b.pp_exposed_s;
    mean.dp_exposed_s += w * b.dp_exposed_s;
    mean.bubble_s += w * b.bubble_s;
    mean.waiting_s += w * b.waiting_s;
    weights += w;
  }
  MEGASIM_ASSERT(weights > 0, "a trace needs at least one rank");
  for (double* x :
       {&mean.compute_s, &mean.tp_exposed_s, &mean.pp_exposed_s, &mean.dp_exposed_s, &mean.bubble_s, &mean.waiting_s}) {
    *x /= weights;
  }
  mean.total_s = sim::to_seconds(trace.iteration_time);
  return mean;
}

// One line per run of consecutive chain steps on the same unit.
std::vector<std::string> describe_chain(const models::Workload& workload, const backend::Trace& trace,
                                        const std::vector<TaskRef>& chain) {
  std::vector<std::string> out;
  for (std::size_t first = 0; first < chain.size();) {
    std::size_t last = first;
    while (last + 1 < chain.size() && chain[last + 1].unit == chain[first].unit) ++last;
    const backend::TraceUnit& unit = trace.units[chain[first].unit];
    const models::StageProgram& program = workload.stages[static_cast<std::size_t>(unit.stage)];
    const auto name = [&](std::size_t k) { return task_name(program.tasks[static_cast<std::size_t>(chain[k].task)]); };
    const double begin_ms = static_cast<double>(unit.records[static_cast<std::size_t>(chain[first].task)].start) / 1e6;
    const double end_ms = static_cast<double>(unit.records[static_cast<std::size_t>(chain[last].task)].end) / 1e6;
    std::string line = fmt::format("stage {} replica {}: {}", unit.stage, unit.replica, name(first));
    if (last > first) line += fmt::format(" .. {}", name(last));
    line +=
        fmt::format(" ({} task{}, {:.3f} to {:.3f} ms)", last - first + 1, last > first ? "s" : "", begin_ms, end_ms);
    out.push_back(std::move(line));
    first = last + 1;
  }
  return out;
}

void write_doubles(JsonWriter& w, std::string_view key, const std::vector<double>& xs) {
  w.key(key).begin_array();
  for (const double x : xs) w.value(x);
  w.end_array();
}

// The figures of summarize_throughput, from the units' breakdowns.
IterationReport headline(const models::Workload& workload, const backend::Trace& trace, const models::GpuSpec& gpu,
                         const std::vector<RankBreakdown>& by_unit) {
  MEGASIM_ASSERT(trace.iteration_time > 0, "an iteration takes time");
  MEGASIM_ASSERT(!trace.units.empty(), "a trace has at least one unit");
  IterationReport r;
  r.backend = trace.backend;
  r.gpu = gpu.name;
  r.plan = workload.plan;
  r.iteration_time_s = sim::to_seconds(trace.iteration_time);
  const double tokens = static_cast<double>(workload.plan.tokens_per_iteration(workload.model.seq_length));
  r.tokens_per_s = tokens / r.iteration_time_s;
  const std::int64_t world = workload.plan.world_size;
  r.mfu = models::flops_utilization(workload.model_flops, r.iteration_time_s, world, gpu.peak_bf16_dense_tflops);
  r.hfu = models::flops_utilization(workload.hardware_flops, r.iteration_time_s, world, gpu.peak_bf16_dense_tflops);
  r.flop_convention = std::string(models::kFlopConvention);
  r.mfu_full_attention = models::flops_utilization(workload.model_flops_full_attention, r.iteration_time_s, world,
                                                   gpu.peak_bf16_dense_tflops);
  r.full_attention_flop_convention = std::string(models::kFullAttentionFlopConvention);
  r.mean = weighted_mean(trace, by_unit);
  return r;
}

}  // namespace

IterationReport summarize_throughput(const models::Workload& workload, const backend::Trace& trace,
                                     const models::GpuSpec& gpu) {
  return headline(workload, trace, gpu, breakdown_by_unit(workload, trace));
}

IterationReport summarize(const models::Workload& workload, const backend::Trace& trace, const models::GpuSpec& gpu) {
  const std::vector<RankBreakdown> by_unit = breakdown_by_unit(workload, trace);
  IterationReport r = headline(workload, trace, gpu, by_unit);
  std::size_t critical = 0;
  sim::SimTime latest = -1;
  const std::vector<sim::SimTime> compute_ends = compute_stream_ends(workload, trace);
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    if (compute_ends[u] > latest) {
      latest = compute_ends[u];
      critical = u;
    }
  }
  r.critical = by_unit[critical];
  r.critical_stage = trace.units[critical].stage;
  r.critical_replica = trace.units[critical].replica;
  r.heat_map = heat_map(workload, trace, by_unit);
  r.critical_path = describe_chain(workload, trace, critical_chain(workload, trace));
  return r;
}

std::string to_text(const IterationReport& r) {
  const models::ResolvedPlan& p = r.plan;
  std::string out = fmt::format("iteration: {:.4f} s ({}), {:.0f} tokens/s, MFU {:.1f}%, HFU {:.1f}% on {}\n",
                                r.iteration_time_s, r.backend, r.tokens_per_s, 100 * r.mfu, 100 * r.hfu, r.gpu);
  // Only where the conventions differ (a sliding window), so that other reports read as before.
  if (r.mfu_full_attention != r.mfu) {
    out += fmt::format("MFU {:.1f}% counting full s x s attention, as MegaScale reports it (megascale2024)\n",
                       100 * r.mfu_full_attention);
  }
  out += fmt::format("plan: {} = {}, {}{}; {} of {}\n", counted(p.world_size, "GPU"), plan_split(p),
                     counted(p.virtual_stages, "virtual stage"), microbatch_groups(p),
                     counted(p.num_microbatches, "micro-batch", "micro-batches"), p.plan.micro_batch_size);
  out += fmt::format("  {:<12} {:>10} {:>10}   (critical: stage {}, replica {})\n", "seconds", "mean", "critical",
                     r.critical_stage, r.critical_replica);
  const std::array<std::pair<const char*, double RankBreakdown::*>, 7> rows{
      {{"compute", &RankBreakdown::compute_s},
       {"tp exposed", &RankBreakdown::tp_exposed_s},
       {"pp exposed", &RankBreakdown::pp_exposed_s},
       {"dp exposed", &RankBreakdown::dp_exposed_s},
       {"bubble", &RankBreakdown::bubble_s},
       {"waiting", &RankBreakdown::waiting_s},
       {"total", &RankBreakdown::total_s}}};
  for (const auto& [label, field] : rows) {
    out += fmt::format("  {:<12} {:>10.4f} {:>10.4f}\n", label, r.mean.*field, r.critical.*field);
  }
  if (r.memory && !r.memory->stages.empty()) {
    out += fmt::format("memory: peak {:.2f} GB per GPU on stage {}\n",
                       static_cast<double>(r.memory->peak().total_bytes()) / kGB, r.memory->peak_stage());
  }
  const auto slowest = std::max_element(r.heat_map.slowdown.begin(), r.heat_map.slowdown.end());
  if (slowest != r.heat_map.slowdown.end() && r.heat_map.pp > 0) {
    const auto cell = static_cast<std::int64_t>(slowest - r.heat_map.slowdown.begin());
    out += fmt::format("heat map: largest compute slowdown {:.3f}x its stage's mean (stage {} replica {})\n", *slowest,
                       cell % r.heat_map.pp, cell / r.heat_map.pp);
  }
  if (!r.critical_path.empty()) {
    out += fmt::format("critical path: {}, last: {}\n", counted(r.critical_path.size(), "segment"),
                       r.critical_path.back());
  }
  if (r.stragglers) out += to_text(*r.stragglers);
  if (r.samples) out += to_text(*r.samples);
  return out;
}

std::string to_json(const IterationReport& r) {
  const models::ResolvedPlan& p = r.plan;
  JsonWriter w;
  w.begin_object();
  w.field("iteration_time_s", r.iteration_time_s).field("tokens_per_s", r.tokens_per_s);
  w.field("mfu", r.mfu).field("hfu", r.hfu).field("flop_convention", r.flop_convention);
  w.field("mfu_full_attention", r.mfu_full_attention)
      .field("full_attention_flop_convention", r.full_attention_flop_convention);
  w.field("backend", r.backend).field("gpu", r.gpu);
  w.key("breakdown").begin_object();
  w.key("mean");
  write_breakdown_json(w, r.mean);
  w.key("critical");
  write_breakdown_json(w, r.critical);
  w.field("critical_stage", r.critical_stage).field("critical_replica", r.critical_replica);
  w.end_object();
  if (r.memory && !r.memory->stages.empty()) {
    w.key("memory").begin_object();
    write_memory_estimate_fields(w, *r.memory);
    w.end_object();
  }
  w.key("plan");
  write_plan_json(w, p);
  w.key("heat_map").begin_object();
  w.field("dp", r.heat_map.dp).field("pp", r.heat_map.pp);
  write_doubles(w, "compute_s", r.heat_map.compute_s);
  write_doubles(w, "slowdown", r.heat_map.slowdown);
  w.end_object();
  w.key("critical_path").begin_array();
  for (const std::string& line : r.critical_path) w.value(line);
  w.end_array();
  if (r.stragglers) {
    w.key("stragglers");
    write_json(w, *r.stragglers);
  }
  if (r.samples) {
    w.key("samples");
    write_json(w, *r.samples);
  }
  if (r.provenance) {
    w.key("provenance");
    write_provenance_json(w, *r.provenance);
  }
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
