// JSON pieces shared by the reports (`megasim plan`, `megasim run`), so a plan or a memory estimate
// has the same keys wherever it appears.
#pragma once

#include <string>

#include "models/memory.h"
#include "models/plan.h"
#include "scenarios/config/json_writer.h"

namespace megasim::scenarios {

struct RankBreakdown;  // iteration_report.h

// {"tp","pp","dp","vpp","micro_batch_size","num_microbatches","global_batch_size","layers_per_stage",
//  "world_size"}, and "first_stage_layers","last_stage_layers" after layers_per_stage when a plan's
// first or last stage holds another number of layers (ResolvedPlan::uneven_stages); "cp",
// "cp_comm_type" when context-parallel, "ep","etp","edp" with expert groups, and
// "microbatch_group_size_per_vp_stage" for an interleaved plan that sets it.
// The plan's split as the text reports print it: "TP 8 x PP 16 x DP 64", with "CP n" after TP when
// context-parallel and ", EP n" (and its expert TP) for expert parallelism.
std::string plan_split(const models::ResolvedPlan& p);
// " (groups of N micro-batches)" for an interleaved plan on the tunable schedule
// (plan.microbatch_group_size_per_vp_stage), else empty: the reports of other plans read as before.
std::string microbatch_groups(const models::ResolvedPlan& p);
void write_plan_json(JsonWriter& w, const models::ResolvedPlan& plan);
// {"parameters_bytes","gradients_bytes","optimizer_bytes","activations_bytes","total_bytes"}. Memory
// is in bytes in JSON and CSV, in decimal GB (1e9 bytes, as HBM capacities: gpus.csv) in text.
void write_memory_json(JsonWriter& w, const models::MemoryBreakdown& memory);
// {"peak_stage", "peak": {...}, "stages": [{...}, ...]} plus any extra fields the caller adds after.
void write_memory_estimate_fields(JsonWriter& w, const models::MemoryEstimate& estimate);

// {"compute_s","tp_exposed_s","pp_exposed_s","dp_exposed_s","bubble_s","waiting_s","total_s"}
void write_breakdown_json(JsonWriter& w, const RankBreakdown& breakdown);

}  // namespace megasim::scenarios
