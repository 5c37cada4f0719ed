#include "scenarios/whatif_study.h"

#include <fmt/format.h>

#include <vector>

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

TraceWhatIfReport run_whatif_study(const std::string& trace_path, std::int64_t slowest) {
  if (slowest < 0) throw sim::ConfigError("whatif.slowest", std::to_string(slowest), "a number of ranks >= 0");
  const TraceFile f = read_trace_file(trace_path);
  require_every_rank(f, trace_path);
  return analyse_trace(f.workload, f.trace, slowest);
}

}  // namespace megasim::scenarios
