// Options given where they do nothing are refused, not ignored (issue 25): a user who passes
// `--iterations 5` to the simulator, or `--trace-ranks` without `--out`, believes it took effect.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace megasim::cli {

// Throws sim::ConfigError when `option` of `command` was given on the command line and `applies`
// is false: "<option> = <value as given> is invalid: expected no <option> <context>", e.g.
// refuse_inert(cmd, "--iterations", backend != "sim", "with --backend sim (... what it is for)").
void refuse_inert(const CLI::App& command, const std::string& option, bool applies, const std::string& context);

// Whether `option` of `command` was given on the command line.
bool given(const CLI::App& command, const std::string& option);

}  // namespace megasim::cli
