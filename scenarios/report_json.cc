#include "scenarios/report_json.h"

namespace megasim::scenarios {

void write_plan_json(JsonWriter& w, const models::ResolvedPlan& p) {
  w.begin_object();
  w.field("tp", p.tp).field("pp", p.pp).field("dp", p.dp).field("vpp", p.virtual_stages);
  w.field("micro_batch_size", p.plan.micro_batch_size).field("num_microbatches", p.num_microbatches);
  w.field("global_batch_size", p.plan.global_batch_size).field("layers_per_stage", p.layers_per_stage);
  w.field("world_size", p.world_size);
  w.end_object();
}

void write_memory_json(JsonWriter& w, const models::MemoryBreakdown& m) {
  w.begin_object();
  w.field("parameters", m.parameters_bytes).field("gradients", m.gradients_bytes);
  w.field("optimizer", m.optimizer_bytes).field("activations", m.activations_bytes);
  w.field("total", m.total_bytes());
  w.end_object();
}

void write_memory_estimate_fields(JsonWriter& w, const models::MemoryEstimate& estimate) {
  w.field("peak_stage", estimate.peak_stage()).key("peak");
  write_memory_json(w, estimate.peak());
  w.key("stages").begin_array();
  for (const models::MemoryBreakdown& m : estimate.stages) write_memory_json(w, m);
  w.end_array();
}

}  // namespace megasim::scenarios
