// megasim: parses the command line and runs one subcommand. Exit codes: 0 success, 2 bad input
// (a message naming the key, the value and what is valid), 1 an unexpected internal failure.
#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/empty_values.h"
#include "cli/process_args.h"
#include "cli/standard_output.h"
#include "scenarios/report/build_info.h"
#include "sim/error.h"
#include "sim/huge_page_heap.h"

namespace {
constexpr int kExitBadInput = 2;
constexpr int kExitInternalError = 1;

// "megasim run": the command whose options failed to parse (the deepest one parsed so far).
std::string command_path(const CLI::App& app) {
  std::string path = "megasim";
  for (const CLI::App* command = &app; !command->get_subcommands().empty();) {
    command = command->get_subcommands().front();
    path += " " + command->get_name();
  }
  return path;
}

// What went wrong: CLI11's message, or, when the first word is no command, that word and the
// commands (CLI11 says only "A subcommand is required").
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (!app.get_subcommands().empty() || rest.empty()) return e.what();
  std::string commands;
  for (const CLI::App* command : app.get_subcommands({}))
    commands += (commands.empty() ? "" : ", ") + command->get_name();
  return "\"" + rest.front() + "\" is not a megasim command (the commands: " + commands + ")";
}

// --help and --version exit 0 with CLI11's own output; a parse error is reported as every other
// error is ("megasim: error: ..."), with where the options are described, and exits 2.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  std::cerr << "megasim: error: " << parse_error_message(app, e) << "\nrun '" << command_path(app)
            << " --help' for the options\n";
  return kExitBadInput;
}
}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) reached while writing an output fails that write (EFBIG), which
  // the writer reports and cleans up (scenarios/config/output_files.h), instead of killing megasim
  // mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  megasim::sim::reexec_with_huge_page_heap(argv);
  megasim::sim::keep_freed_heap_memory();
  megasim::cli::process_args() = {argc, argv};
  CLI::App app{"megasim: simulate large-scale LLM training clusters"};
  app.set_version_flag("--version", "megasim " + std::string(megasim::scenarios::megasim_version()) + " (commit " +
                                        std::string(megasim::scenarios::megasim_commit()) + ")");
  app.require_subcommand(1);
  const std::vector<megasim::cli::Action> actions{
      megasim::cli::register_topo(app),     megasim::cli::register_collective(app),
      megasim::cli::register_run(app),      megasim::cli::register_plan(app),
      megasim::cli::register_keys(app),     megasim::cli::register_calibrate(app),
      megasim::cli::register_backends(app), megasim::cli::register_validate(app),
      megasim::cli::register_campaign(app), megasim::cli::register_whatif(app),
      megasim::cli::register_sweep(app),    megasim::cli::register_explain(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
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
