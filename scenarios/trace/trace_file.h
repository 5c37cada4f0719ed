// Reads back a Perfetto trace written by perfetto_trace.h with its scenario embedded (`megasim run
// --out DIR` writes trace.json so, and the same in binary as trace.bin: binary_trace.h), simulated
// or measured: the scenario, the workload rebuilt from it, and the Trace of the written ranks. The what-if analysis of
// a real run starts here. The text is read in one streaming pass (trace_events.h) and a file through a memory mapping
// (mapped_file.h): memory grows with the records kept, not with the JSON, so a 12,288-GPU trace of
// GBs reads on a workstation.
#pragma once

#include <string>
#include <string_view>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

struct TraceFile {
  Scenario scenario;
  models::Workload workload;
  backend::Trace trace;  // the written ranks' units (perhaps not all of the plan's), flows empty
};

// Throws sim::ConfigError naming `source` for malformed JSON (with line and column), an event
// without what trace_events.h requires (with the event's line and column), a trace without the
// "megasim" object or its scenario (written by an older megasim, or without one), an unknown key or
// a plan that does not resolve, and events that do not fill every task record of a written rank.
TraceFile parse_trace_file(std::string_view text, std::string_view source);
// The same from a file, trace.json or trace.bin (binary_trace.h), told apart by trace.bin's magic
// bytes whatever the file's name; throws sim::ConfigError when it cannot be read, and as
// parse_trace_file or parse_binary_trace.
TraceFile read_trace_file(const std::string& path);

}  // namespace megasim::scenarios
