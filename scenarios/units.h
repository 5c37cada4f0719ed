// Sizes as people write them: "1GiB", "512MiB", "4KB", "1e9", "1048576".
#pragma once

#include <string>
#include <string_view>

namespace megasim::scenarios {

// Bytes from text: a number (integer, decimal or exponent form) with an optional unit B, KB, MB, GB,
// TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case-sensitive as in nccl-tests.
// Throws sim::ConfigError(key, text, ...) when malformed, not finite, or <= 0.
double parse_bytes(std::string_view text, std::string_view key);
// "1 GiB", "512 MiB", "1000 B": the largest binary unit that keeps the value >= 1.
std::string format_bytes(double bytes);

}  // namespace megasim::scenarios
