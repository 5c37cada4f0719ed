// Sizes as people write them: "1GiB", "512MiB", "4KB", "1e9", "1048576".
#pragma once

#include <string>
#include <string_view>

namespace megasim::scenarios {

// Bytes from text: a number (integer, decimal or exponent form) with an optional unit B, KB, MB, GB,
// TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case-sensitive as in nccl-tests.
// Throws sim::ConfigError(key, text, ...) when malformed, not a whole number of bytes (1.5 B, 1e-300),
// or outside [1, kMaxBytes].
double parse_bytes(std::string_view text, std::string_view key);
// 2^50 bytes (1 PiB): a thousand times the memory of any GPU, far above any one collective's buffer,
// and well inside the 2^53 bytes a double counts exactly.
inline constexpr double kMaxBytes = 1125899906842624.0;
// "1 GiB", "512 MiB", "1000 B": the largest binary unit that keeps the value >= 1.
std::string format_bytes(double bytes);

}  // namespace megasim::scenarios
