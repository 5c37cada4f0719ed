#include "scenarios/studies/plan_study.h"

#include <fmt/format.h>

#include "models/flops.h"
#include "models/gpu_spec.h"
#include "models/model_spec.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "scenarios/report/report_json.h"

namespace megasim::scenarios {
namespace {

constexpr double kGB = 1e9;

}  // namespace

PlanReport run_plan_study(const Scenario& s) {
  return run_plan_study(resolve(s));
}

PlanReport run_plan_study(const ResolvedScenario& resolved) {
  const Scenario& s = resolved.scenario;
  const models::GpuSpec& gpu = resolved.device.gpu;
  PlanReport r;
  r.plan = resolved.plan;
  r.gpu = gpu.name;
  r.hbm_bytes = gpu.hbm_gbytes * kGB;
  r.parameters = models::parameter_count(s.model, r.plan.tp);
  r.memory = resolved.memory;
  r.fits = static_cast<double>(r.memory.peak().total_bytes()) <= r.hbm_bytes;
  const models::IterationFlops flops = models::iteration_flops(s.model, r.plan);
  r.model_flops_per_iteration = flops.model;
  r.hardware_flops_per_iteration = flops.hardware;
  r.tokens_per_iteration = r.plan.tokens_per_iteration(s.model.seq_length);
  r.flop_convention = std::string(models::kFlopConvention);
  return r;
}

std::string to_text(const PlanReport& r) {
  const models::ResolvedPlan& p = r.plan;
  std::string out = fmt::format("plan: {} = {}", counted(p.world_size, "GPU"), plan_split(p));
  if (p.interleaved()) {
    out += fmt::format(", {} per rank{}", counted(p.virtual_stages, "virtual stage"), microbatch_groups(p));
  }
  out +=
      fmt::format("; {} of {} per iteration, {} per stage", counted(p.num_microbatches, "micro-batch", "micro-batches"),
                  p.plan.micro_batch_size, counted(p.layers_per_stage, "layer"));
  if (p.uneven_stages()) {
    out += fmt::format(" ({} on the first, {} on the last)", p.first_stage_layers, p.last_stage_layers);
  }
  out += "\n";
  for (const std::string& w : p.warnings) out += fmt::format("warning: {}\n", w);
  out += fmt::format("model: {:.1f} B parameters, padded vocabulary {}\n", static_cast<double>(r.parameters) / 1e9,
                     p.padded_vocab_size);
  out += fmt::format("memory per GPU ({}, {:.0f} GB):\n", r.gpu, r.hbm_bytes / kGB);
  out += fmt::format("  {:>5} {:>10} {:>10} {:>10} {:>12} {:>10}\n", "stage", "params GB", "grads GB", "optim GB",
                     "activ. GB", "total GB");
  for (std::size_t i = 0; i < r.memory.stages.size(); ++i) {
    const models::MemoryBreakdown& m = r.memory.stages[i];
    out += fmt::format("  {:>5} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f} {:>10.2f}\n", i,
                       static_cast<double>(m.parameters_bytes) / kGB, static_cast<double>(m.gradients_bytes) / kGB,
                       static_cast<double>(m.optimizer_bytes) / kGB, static_cast<double>(m.activations_bytes) / kGB,
                       static_cast<double>(m.total_bytes()) / kGB);
  }
  const double peak = static_cast<double>(r.memory.peak().total_bytes());
  out += r.fits ? fmt::format("fits: peak {:.2f} GB on stage {} of {:.0f} GB\n", peak / kGB, r.memory.peak_stage(),
                              r.hbm_bytes / kGB)
                : fmt::format("DOES NOT FIT: stage {} needs {:.2f} GB, the {} has {:.0f} GB\n", r.memory.peak_stage(),
                              peak / kGB, r.gpu, r.hbm_bytes / kGB);
  out += fmt::format("FLOPs per iteration: {:.4g} model, {:.4g} hardware ({} tokens)\nconvention: {}\n",
                     r.model_flops_per_iteration, r.hardware_flops_per_iteration, r.tokens_per_iteration,
                     r.flop_convention);
  return out;
}

std::string to_json(const PlanReport& r) {
  const models::ResolvedPlan& p = r.plan;
  JsonWriter w;
  w.begin_object();
  w.key("plan");
  write_plan_json(w, p);
  w.key("warnings").begin_array();
  for (const std::string& warning : p.warnings) w.value(warning);
  w.end_array();
  w.field("gpu", r.gpu).field("hbm_bytes", r.hbm_bytes).field("parameters", r.parameters);
  w.key("memory").begin_object();
  w.field("fits", r.fits);
  write_memory_estimate_fields(w, r.memory);
  w.end_object();
  w.field("model_flops_per_iteration", r.model_flops_per_iteration);
  w.field("hardware_flops_per_iteration", r.hardware_flops_per_iteration);
  w.field("tokens_per_iteration", r.tokens_per_iteration).field("flop_convention", r.flop_convention);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
