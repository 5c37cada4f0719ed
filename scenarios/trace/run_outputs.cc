#include "scenarios/trace/run_outputs.h"

#include <filesystem>
#include <ostream>

#include "scenarios/config/output_files.h"
#include "scenarios/trace/binary_trace.h"

namespace megasim::scenarios {
namespace {

std::string in_folder(const std::string& folder, const char* name) {
  return (std::filesystem::path(folder) / name).string();
}

}  // namespace

void check_run_outputs(const std::string& folder, const std::string& option) {
  check_output_files(folder, {kRunReportFile, kRunBinaryTraceFile, kRunTraceFile}, option);
}

std::vector<std::string> write_run_outputs(const std::string& folder, const std::string& option,
                                           const std::string& report_json, const models::Workload& workload,
                                           const backend::Trace& trace, const TraceFilter& filter,
                                           const Scenario& scenario) {
  static_cast<void>(selected_ranks(workload, trace, filter));  // a bad filter is refused before any write
  OutputFiles files;
  files.create_folder(folder, option);
  std::vector<std::string> paths = {in_folder(folder, kRunReportFile)};
  files.add(paths.back(), option, report_json);
  // The small binary trace before the large text one, so that its refusals come before GBs are written.
  paths.push_back(in_folder(folder, kRunBinaryTraceFile));
  files.add(paths.back(), option,
            [&](std::ostream& out) { write_binary_trace(out, workload, trace, filter, scenario); });
  paths.push_back(in_folder(folder, kRunTraceFile));
  files.add(paths.back(), option,
            [&](std::ostream& out) { write_perfetto_trace(out, workload, trace, filter, &scenario); });
  files.commit();
  return paths;
}

}  // namespace megasim::scenarios
