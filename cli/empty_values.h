// A check of the parsed command line that every command shares.
#pragma once

#include <CLI/CLI.hpp>

namespace megasim::cli {

// Refuses an empty value given to any option or positional argument of the parsed subcommands
// (`--out ""`, `run ""`), and an empty item of a comma-separated list (`--trace-ranks 1,,2`, which
// CLI11 reads as 1,2): an empty value names nothing, and is nearly always an unset shell variable
// (`--out "$DIR"`). Left alone, it would read as the option not given (a run with the built-in
// scenario, a report never written) or as a shorter list. `argv` is what `app` parsed. Throws
// sim::ConfigError naming the option.
void refuse_empty_values(const CLI::App& app, int argc, const char* const* argv);

}  // namespace megasim::cli
