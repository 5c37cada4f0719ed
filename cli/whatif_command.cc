// `megasim whatif TRACE.json [--json] [--slowest K]`: the what-if analysis (scenarios/trace_whatif.h)
// of an iteration recorded in a Perfetto trace that megasim wrote with its scenario, simulated
// (`megasim run --out DIR`) or measured on a real backend (`megasim run --backend cpu|cuda --out
// DIR`, `megasim validate --out DIR`): the workload is rebuilt from the embedded scenario and the
// iteration replayed with evened-out compute. Needs every rank of the plan in the trace.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "scenarios/trace_file.h"
#include "scenarios/trace_whatif.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct WhatIfOptions {
  std::string trace_path;
  bool json = false;
  std::int64_t slowest = 1;
};

// Every rank of the plan must have its timeline in the trace: the replay needs each transfer's
// peer and each data-parallel group whole.
void require_every_rank(const std::string& path, const scenarios::TraceFile& f) {
  const std::int64_t world = f.workload.plan.world_size;
  std::vector<bool> seen(static_cast<std::size_t>(world), false);
  std::int64_t count = 0;
  for (const backend::TraceUnit& unit : f.trace.units) {
    for (const std::int64_t rank : unit.ranks) {
      if (rank < 0 || rank >= world) {
        throw sim::ConfigError(fmt::format("{}: rank {} is not a rank of the plan's {}", path, rank, world));
      }
      if (!seen[static_cast<std::size_t>(rank)]) ++count;
      seen[static_cast<std::size_t>(rank)] = true;
    }
  }
  if (count < world) {
    throw sim::ConfigError(fmt::format(
        "{}: the trace holds {} of the plan's {} ranks; the what-ifs replay the whole iteration: write it with "
        "`--max-trace-ranks 0` (megasim run ... --out DIR --max-trace-ranks 0)",
        path, count, world));
  }
}

void run_whatif(const WhatIfOptions& o) {
  if (o.slowest < 0) throw sim::ConfigError("whatif.slowest", std::to_string(o.slowest), "a number of ranks >= 0");
  const scenarios::TraceFile f = scenarios::read_trace_file(o.trace_path);
  require_every_rank(o.trace_path, f);
  const scenarios::TraceWhatIfReport report = scenarios::analyse_trace(f.workload, f.trace, o.slowest);
  std::cout << (o.json ? scenarios::to_json(report) : scenarios::to_text(report)) << std::flush;
}

}  // namespace

Action register_whatif(CLI::App& app) {
  auto o = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "what-if analysis of a trace megasim wrote (simulated or measured): the iteration with evened-out "
      "compute");
  cmd->add_option("trace", o->trace_path, "trace.json written by megasim run/validate --out DIR")->required();
  cmd->add_flag("--json", o->json, "print the analysis as JSON");
  cmd->add_option("--slowest", o->slowest, "ranks brought to their group's mean in fix_slowest_ranks")
      ->capture_default_str();
  return [cmd, o] {
    if (cmd->parsed()) run_whatif(*o);
  };
}

}  // namespace megasim::cli
