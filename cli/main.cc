// megasim: parses the command line and runs one subcommand. Exit codes: 0 success, 2 bad input
// (a message naming the key, the value and what is valid), 1 an unexpected internal failure.
#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <iostream>
#include <vector>

#include "cli/commands.h"
#include "cli/cpu_runs.h"
#include "cli/empty_values.h"
#include "cli/standard_output.h"
#include "sim/error.h"
#include "sim/huge_page_heap.h"

namespace {
constexpr int kExitBadInput = 2;
constexpr int kExitInternalError = 1;
}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) reached while writing an output fails that write (EFBIG), which the
  // writer reports and cleans up (scenarios/output_files.h), instead of killing megasim mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  megasim::sim::reexec_with_huge_page_heap(argv);
  megasim::sim::keep_freed_heap_memory();
  megasim::cli::process_args() = {argc, argv};
  CLI::App app{"megasim: simulate large-scale LLM training clusters"};
  app.set_version_flag("--version", "megasim 0.1.0");
  app.require_subcommand(1);
  const std::vector<megasim::cli::Action> actions{
      megasim::cli::register_topo(app),     megasim::cli::register_collective(app),
      megasim::cli::register_run(app),      megasim::cli::register_plan(app),
      megasim::cli::register_keys(app),     megasim::cli::register_calibrate(app),
      megasim::cli::register_backends(app), megasim::cli::register_validate(app),
      megasim::cli::register_campaign(app), megasim::cli::register_whatif(app),
      megasim::cli::register_sweep(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  try {
    megasim::cli::refuse_empty_values(app, argc, argv);
    for (const auto& action : actions) action();
    megasim::cli::flush_standard_output();
  } catch (const megasim::sim::ConfigError& e) {
    std::cerr << "megasim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "megasim: internal error: " << e.what() << "\n";
    return kExitInternalError;
  }
  return 0;
}
