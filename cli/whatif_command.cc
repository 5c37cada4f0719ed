// `megasim whatif TRACE [--json] [--slowest K]`: the what-if analysis
// (scenarios/trace/trace_whatif.h) of an iteration recorded in trace.bin or trace.json (told apart
// by trace.bin's magic bytes; a folder stands for its trace.bin) that megasim wrote with its
// scenario, simulated (`megasim run --out DIR`) or measured on a real backend (`megasim run
// --backend cpu|cuda --out DIR`, `megasim validate --out DIR`): the workload is rebuilt from the
// embedded scenario and the iteration replayed with evened-out compute. Needs every rank of the
// plan in the trace.
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "scenarios/studies/whatif_study.h"

namespace megasim::cli {
namespace {

struct WhatIfOptions {
  std::string trace_path;
  bool json = false;
  std::int64_t slowest = 1;
};

void run_whatif(const WhatIfOptions& o) {
  const scenarios::TraceWhatIfReport report = scenarios::run_whatif_study(o.trace_path, o.slowest);
  std::cout << (o.json ? scenarios::to_json(report) : scenarios::to_text(report)) << std::flush;
}

}  // namespace

Action register_whatif(CLI::App& app) {
  auto o = std::make_shared<WhatIfOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      "what-if analysis of a trace megasim wrote (simulated or measured): the iteration with evened-out "
      "compute");
  cmd->add_option("trace", o->trace_path,
                  "trace.bin or trace.json written by megasim run --out DIR (or DIR itself), or "
                  "measured_trace.json of megasim validate --out DIR")
      ->required();
  cmd->add_flag("--json", o->json, "print the analysis as JSON");
  cmd->add_option("--slowest", o->slowest, "ranks brought to their group's mean in fix_slowest_ranks")
      ->check(integer_in(INT64_MIN, INT64_MAX))  // the study says which counts are valid
      ->capture_default_str();
  return [cmd, o] {
    if (cmd->parsed()) run_whatif(*o);
  };
}

}  // namespace megasim::cli
