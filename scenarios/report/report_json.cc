#include "scenarios/report/report_json.h"

#include <fmt/format.h>

#include "scenarios/report/iteration_report.h"

namespace megasim::scenarios {

std::string plan_split(const models::ResolvedPlan& p) {
  std::string out = fmt::format("TP {}", p.tp);
  if (p.cp > 1) out += fmt::format(" x CP {} ({})", p.cp, models::to_string(p.plan.cp_comm_type));
  out += fmt::format(" x PP {} x DP {}", p.pp, p.dp);
  if (p.ep > 1 || p.etp != p.tp) out += fmt::format(", EP {} x expert TP {} (expert DP {})", p.ep, p.etp, p.edp);
  return out;
}

std::string microbatch_groups(const models::ResolvedPlan& p) {
  if (p.microbatch_group() == 0) return "";
  return fmt::format(" (groups of {} micro-batches)", p.microbatch_group());
}

void write_plan_json(JsonWriter& w, const models::ResolvedPlan& p) {
  w.begin_object();
  w.field("tp", p.tp).field("pp", p.pp).field("dp", p.dp).field("vpp", p.virtual_stages);
  w.field("micro_batch_size", p.plan.micro_batch_size).field("num_microbatches", p.num_microbatches);
  w.field("global_batch_size", p.plan.global_batch_size).field("layers_per_stage", p.layers_per_stage);
  if (p.uneven_stages()) {
    w.field("first_stage_layers", p.first_stage_layers).field("last_stage_layers", p.last_stage_layers);
  }
  if (p.cp > 1) w.field("cp", p.cp).field("cp_comm_type", std::string(models::to_string(p.plan.cp_comm_type)));
  if (p.ep > 1 || p.etp != p.tp) w.field("ep", p.ep).field("etp", p.etp).field("edp", p.edp);
  if (p.microbatch_group() != 0) w.field("microbatch_group_size_per_vp_stage", p.microbatch_group());
  w.field("world_size", p.world_size);
  w.end_object();
}

void write_memory_json(JsonWriter& w, const models::MemoryBreakdown& m) {
  w.begin_object();
  w.field("parameters_bytes", m.parameters_bytes).field("gradients_bytes", m.gradients_bytes);
  w.field("optimizer_bytes", m.optimizer_bytes).field("activations_bytes", m.activations_bytes);
  w.field("total_bytes", m.total_bytes());
  w.end_object();
}

void write_memory_estimate_fields(JsonWriter& w, const models::MemoryEstimate& estimate) {
  w.field("peak_stage", estimate.peak_stage()).key("peak");
  write_memory_json(w, estimate.peak());
  w.key("stages").begin_array();
  for (const models::MemoryBreakdown& m : estimate.stages) write_memory_json(w, m);
  w.end_array();
}

void write_breakdown_json(JsonWriter& w, const RankBreakdown& b) {
  w.begin_object();
  w.field("compute_s", b.compute_s).field("tp_exposed_s", b.tp_exposed_s).field("pp_exposed_s", b.pp_exposed_s);
  w.field("dp_exposed_s", b.dp_exposed_s).field("bubble_s", b.bubble_s).field("waiting_s", b.waiting_s);
  w.field("total_s", b.total_s);
  w.end_object();
}

}  // namespace megasim::scenarios
