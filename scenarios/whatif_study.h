// `megasim whatif TRACE.json`: the what-if analysis (trace_whatif.h) of an iteration recorded in a
// Perfetto trace that megasim wrote with its scenario embedded (trace_file.h), simulated (`megasim
// run --out DIR --max-trace-ranks 0`) or measured (`megasim validate --out DIR`). The CLI and the
// Python package both call this, so both give the same report and the same errors.
#pragma once

#include <cstdint>
#include <string>

#include "scenarios/trace_file.h"
#include "scenarios/trace_whatif.h"

namespace megasim::scenarios {

// Throws sim::ConfigError ("whatif.slowest") for slowest < 0, before reading the file; as
// read_trace_file for a file that cannot be read or parsed; naming `trace_path` when a rank of the
// trace is outside the plan or the trace lacks some of the plan's ranks (the replay needs each
// transfer's peer and each data-parallel group whole); and as analyse_trace.
TraceWhatIfReport run_whatif_study(const std::string& trace_path, std::int64_t slowest);

// The check run_whatif_study makes on a read trace: every rank of f's plan has its timeline in it.
// `source` names the trace in the error.
void require_every_rank(const TraceFile& f, const std::string& source);

}  // namespace megasim::scenarios
