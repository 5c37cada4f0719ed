// `megasim whatif TRACE`: the what-if analysis (trace_whatif.h) of an iteration recorded with its
// scenario embedded, in trace.bin (binary_trace.h) or a Perfetto trace.json (trace_file.h),
// simulated (`megasim run --out DIR --max-trace-ranks 0`) or measured (`megasim validate --out
// DIR`). The CLI and the Python package both call this, so both give the same report and the same
// errors.
#pragma once

#include <cstdint>
#include <string>

#include "scenarios/trace/trace_file.h"
#include "scenarios/trace/trace_whatif.h"

namespace megasim::scenarios {

// The file `megasim whatif PATH` reads: PATH itself or, for a folder `run --out` wrote, its
// trace.bin (its trace.json when there is no trace.bin).
std::string recorded_trace_path(const std::string& path);

// Reads recorded_trace_path(trace_path). Throws sim::ConfigError ("whatif.slowest") for slowest < 0,
// before reading the file; as read_trace_file for a file that cannot be read or parsed; naming the
// file read when a rank of the trace is outside the plan or the trace lacks some of the plan's ranks (the replay needs
// each transfer's peer and each data-parallel group whole); and as analyse_trace.
TraceWhatIfReport run_whatif_study(const std::string& trace_path, std::int64_t slowest);

// The check run_whatif_study makes on a read trace: every rank of f's plan has its timeline in it.
// `source` names the trace in the error.
void require_every_rank(const TraceFile& f, const std::string& source);

}  // namespace megasim::scenarios
