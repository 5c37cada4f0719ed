#include "scenarios/run_outputs.h"

#include <filesystem>
#include <ostream>

#include "scenarios/output_files.h"

namespace megasim::scenarios {
namespace {

std::string report_path(const std::string& folder) {
  return (std::filesystem::path(folder) / "report.json").string();
}

std::string trace_path(const std::string& folder) {
  return (std::filesystem::path(folder) / "trace.json").string();
}

}  // namespace

void check_run_outputs(const std::string& folder, const std::string& option) {
  check_output_files(folder, {"report.json", "trace.json"}, option);
}

std::vector<std::string> write_run_outputs(const std::string& folder, const std::string& option,
                                           const std::string& report_json, const models::Workload& workload,
                                           const backend::Trace& trace, const TraceFilter& filter,
                                           const Scenario* scenario) {
  static_cast<void>(selected_ranks(workload, trace, filter));  // a bad filter is refused before any write
  OutputFiles files;
  files.create_folder(folder, option);
  files.add(report_path(folder), option, report_json);
  files.add(trace_path(folder), option,
            [&](std::ostream& out) { write_perfetto_trace(out, workload, trace, filter, scenario); });
  files.commit();
  return {report_path(folder), trace_path(folder)};
}

}  // namespace megasim::scenarios
