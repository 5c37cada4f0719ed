// The end of every command's output: what it printed must have reached its destination.
#pragma once

namespace megasim::cli {

// Flushes standard output; throws sim::ConfigError when any write to it failed (`megasim run --json
// > /dev/full`, a closed pipe's reader gone with SIGPIPE ignored), so the exit code says the report
// did not arrive (exit 2, as for an output file that cannot be written).
void flush_standard_output();

}  // namespace megasim::cli
