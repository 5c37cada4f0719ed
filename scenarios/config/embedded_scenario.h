// The scenario a recorded iteration carries, so that `megasim whatif` can rebuild its workload: every
// key of keys.h as "section.key": value in one JSON object. Both trace files of `run --out` embed
// this same object: trace.json as its "megasim".scenario member (perfetto_trace.h), trace.bin as a
// text section (binary_trace.h); one writer and one reader serve both, so the two files give the
// same Scenario and no second scenario format exists.
#pragma once

#include <string>
#include <string_view>

#include "models/workload.h"
#include "scenarios/config/json_reader.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

// Writes the object (begin_object ... end_object) at the writer's position. A non-finite number is
// written as null (json_writer.h), which reads back as the key's default.
void write_scenario_keys(JsonWriter& w, const Scenario& scenario);
// The same object alone, on one line.
std::string scenario_keys_json(const Scenario& scenario);

// The Scenario from such an object: the defaults, then each key set (keys.h coerce). Throws
// sim::ConfigError "SOURCE: what" for a member that is not "section.key", a key keys.h does not
// know, a value that is not a scalar, and as coerce for a value the key refuses.
Scenario scenario_from_keys(const JsonValue& keys, std::string_view source);

// The workload a recorded iteration ran: the scenario's plan resolved on its GPUs. Throws
// sim::ConfigError as resolve_plan for a plan that does not resolve.
models::Workload recorded_workload(const Scenario& scenario);

}  // namespace megasim::scenarios
