// The files of one iteration, `megasim run --out DIR` and Python's RunReport.save(DIR): report.json,
// trace.bin (the recorded iteration for `megasim whatif`, compact: binary_trace.h) and trace.json
// (Perfetto, perfetto_trace.h; the same recording as text), written together or not at all
// (output_files.h).
#pragma once

#include <string>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/perfetto_trace.h"

namespace megasim::scenarios {

// The names of the files in the folder, in the order write_run_outputs returns their paths.
inline constexpr const char* kRunReportFile = "report.json";
inline constexpr const char* kRunBinaryTraceFile = "trace.bin";
inline constexpr const char* kRunTraceFile = "trace.json";

// Checks, before the iteration is simulated or measured, that `folder` can take the files
// (output_files.h check_output_files). `option` names the folder in errors ("--out").
void check_run_outputs(const std::string& folder, const std::string& option);

// Creates `folder` if needed and writes the three files (the traces streamed: trace.json is GBs at
// 12,288 GPUs with every rank); throws sim::ConfigError for a bad filter (trace.ranks,
// trace.max_ranks) or an unwritable path, leaving the folder as it was. Both traces hold the ranks
// `filter` selects and embed `scenario`, the one the workload was built from. Returns the three
// paths, in the order above.
std::vector<std::string> write_run_outputs(const std::string& folder, const std::string& option,
                                           const std::string& report_json, const models::Workload& workload,
                                           const backend::Trace& trace, const TraceFilter& filter,
                                           const Scenario& scenario);

}  // namespace megasim::scenarios
