// What stragglers cost an iteration, in the style of Lin et al.'s what-if analysis (OSDI'25): the
// iteration re-simulated without the stragglers, with every rank at its group's mean compute, and
// with the k slowest hosts replaced, and with the last pipeline stage balanced; the compute time they
// added per op type; and the hosts on the critical path. Filled by run_iteration_study when the scenario's [stragglers]
// section is active.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "backend/sim/straggler_draw.h"
#include "backend/trace.h"
#include "models/stragglers.h"
#include "models/workload.h"
#include "scenarios/config/json_writer.h"
#include "topology/topology.h"

namespace megasim::scenarios {

struct StragglerWhatIf {
  std::string name;  // "no_stragglers", "group_mean_compute", "replace_slowest_hosts", "restart",
                     // "balanced_last_stage"
  std::string description;
  double iteration_time_s = 0;
};

struct StragglerReport {
  double iteration_time_s = 0;                                 // with the stragglers (the report's iteration)
  std::int64_t slow_hosts = 0;                                 // servers with a factor > 1
  std::vector<std::pair<std::int64_t, double>> slowest_hosts;  // (server, factor), slowest first, at most 8
  std::vector<std::int64_t> critical_hosts;                    // servers of the critical path's units
  std::vector<StragglerWhatIf> whatifs;
  // Per task category ("forward", "backward", ...): compute seconds the stragglers added, summed
  // over the (stage, replica) units, against the iteration without stragglers.
  std::vector<std::pair<std::string, double>> added_compute_s;
};

// `inputs` is the simulation that produced `trace`, with `draw` applied (straggler_draw.h). Runs
// up to five more simulations (two on threads of their own):
//  - no_stragglers: no slowdown, no task scale, no pauses;
//  - group_mean_compute: every unit's compute multiple (its slowdown times each task's scale)
//    replaced by the mean over the units of its stage (its data-parallel peers), pauses kept;
//  - replace_slowest_hosts: the params.whatif_replaced_hosts slowest servers at factor 1;
//  - restart (servers drift at params.uptime_h): the drift reset, other stragglers kept;
//  - balanced_last_stage (pp > 1): the last stage's compute scaled to the mean of the other stages'
//    in the iteration without stragglers (Megatron's last stage carries the logits and the loss).
StragglerReport analyse_stragglers(const models::StragglerParams& params, const backend::StragglerDraw& draw,
                                   const backend::IterationInputs& inputs, const backend::Trace& trace);

std::string to_text(const StragglerReport& report);
// The what-ifs as a JSON array of {name, description, iteration_time_s, saving_percent}, the saving
// against `reference_s` (shared with trace_whatif.h).
void write_whatifs(JsonWriter& w, const std::vector<StragglerWhatIf>& whatifs, double reference_s);
// Keys: iteration_time_s, slow_hosts, slowest_hosts [{server, factor}], critical_hosts, whatif
// [{name, description, iteration_time_s, saving_percent}], added_compute_s {category: seconds}.
void write_json(JsonWriter& w, const StragglerReport& report);

}  // namespace megasim::scenarios
