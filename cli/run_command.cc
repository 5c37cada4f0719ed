#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/scenario_options.h"
#include "scenarios/perfetto_trace.h"
#include "scenarios/run_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct RunOptions {
  ScenarioOptions scenario;
  std::string out_dir;
  bool json = false;
  std::vector<std::int64_t> trace_ranks;
  std::int64_t max_trace_ranks = 16;
};

void run_run(const RunOptions& o) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  const scenarios::RunResult result = scenarios::run_iteration_study(s);
  // Everything is rendered before anything is written, so bad input leaves no partial output.
  const std::string report_json = scenarios::to_json(result.report);
  if (!o.out_dir.empty()) {
    scenarios::TraceFilter filter;
    filter.ranks = o.trace_ranks;
    filter.max_ranks = o.max_trace_ranks;
    std::ostringstream trace;
    scenarios::write_perfetto_trace(trace, result.workload, result.trace, filter);
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) throw sim::ConfigError("--out", o.out_dir, "a directory that can be created and written");
    write_file(o.out_dir + "/report.json", report_json, "--out");
    write_file(o.out_dir + "/trace.json", trace.str(), "--out");
  }
  std::cout << (o.json ? report_json : scenarios::to_text(result.report));
  if (!o.json) std::cerr << "simulated in " << result.wall_time_s << " s\n";
}

}  // namespace

Action register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "simulate one training iteration of the scenario rank by rank");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--out", o->out_dir, "write report.json and trace.json (Perfetto) into DIR");
  cmd->add_flag("--json", o->json, "print the report as JSON");
  cmd->add_option("--trace-ranks", o->trace_ranks,
                  "ranks written to trace.json (default: TP rank 0 of every stage, replica by replica)")
      ->delimiter(',');
  cmd->add_option("--max-trace-ranks", o->max_trace_ranks, "at most this many ranks in trace.json (0: all)")
      ->capture_default_str();
  return [cmd, o] {
    if (cmd->parsed()) run_run(*o);
  };
}

}  // namespace megasim::cli
