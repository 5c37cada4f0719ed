// Range checks for numeric command-line options, on the option's text before CLI11 converts it.
// CLI11 2.1 reads integers with strtoll/strtoull in base 0: it clamps a value beyond 64 bits to
// INT64_MAX without a word (a seed of 2^64 became 2^63 - 1), reads "010" as octal 8, and turns "-1"
// into 2^64 - 1 for an unsigned target. These validators accept a base-10 integer, or a finite
// decimal number, inside a physical range; anything else fails the parse (exit code 2) with
// "--name: TEXT: want a base-10 integer from MIN to MAX". Where a study checks the value itself (with
// a message naming the option and the value), the range given is the option's type's, so that
// only malformed or out-of-type text stops at the parser.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace megasim::cli {

CLI::Validator integer_in(std::int64_t min, std::int64_t max);
CLI::Validator number_in(double min, double max);

// Ranges shared by several commands.
inline constexpr std::int64_t kMaxGpusOption = 16'777'214;  // NIC addresses in 10.0.0.0/8 (cluster.gpus)
inline constexpr std::int64_t kMaxThreadsOption = 1024;
inline constexpr double kMaxTimeoutS = 7 * 86400.0;  // a week

}  // namespace megasim::cli
