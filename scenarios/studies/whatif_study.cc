#include "scenarios/studies/whatif_study.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "scenarios/trace/run_outputs.h"
#include "sim/error.h"

namespace megasim::scenarios {

void require_every_rank(const TraceFile& f, const std::string& source) {
  const std::int64_t world = f.workload.plan.world_size;
  std::vector<bool> seen(static_cast<std::size_t>(world), false);
  std::int64_t count = 0;
  for (const backend::TraceUnit& unit : f.trace.units) {
    for (const std::int64_t rank : unit.ranks) {
      if (rank < 0 || rank >= world) {
        throw sim::ConfigError(fmt::format("{}: rank {} is not a rank of the plan's {}", source, rank, world));
      }
      if (!seen[static_cast<std::size_t>(rank)]) ++count;
      seen[static_cast<std::size_t>(rank)] = true;
    }
  }
  if (count < world) {
    throw sim::ConfigError(fmt::format(
        "{}: the trace holds {} of the plan's {} ranks; the what-ifs replay the whole iteration: write it with "
        "`--max-trace-ranks 0` (megasim run ... --out DIR --max-trace-ranks 0)",
        source, count, world));
  }
}

std::string recorded_trace_path(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_directory(path, ec)) return path;
  const std::filesystem::path binary = std::filesystem::path(path) / kRunBinaryTraceFile;
  if (std::filesystem::exists(binary, ec)) return binary.string();
  return (std::filesystem::path(path) / kRunTraceFile).string();
}

TraceWhatIfReport run_whatif_study(const std::string& trace_path, std::int64_t slowest) {
  if (slowest < 0) throw sim::ConfigError("whatif.slowest", std::to_string(slowest), "a number of ranks >= 0");
  const std::string path = recorded_trace_path(trace_path);
  const TraceFile f = read_trace_file(path);
  require_every_rank(f, path);
  return analyse_trace(f.workload, f.trace, slowest);
}

}  // namespace megasim::scenarios
