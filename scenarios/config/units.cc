#include "scenarios/config/units.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 9> kUnits{{
    {"B", 1.0},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1024.0 * 1024},
    {"GiB", 1024.0 * 1024 * 1024},
    {"TiB", 1024.0 * 1024 * 1024 * 1024},
}};

}  // namespace

double parse_bytes(std::string_view text, std::string_view key) {
  const std::string copy(text);
  const std::string valid = "a whole number of bytes from 1 B to 2^50 B (1 PiB), such as 1048576, 64MiB, 1GiB or 4GB";
  char* end = nullptr;
  const double number = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str()) throw sim::ConfigError(std::string(key), "\"" + copy + "\"", valid);
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 1.0;
  if (!unit.empty()) {
    bool found = false;
    for (const auto& [name, factor] : kUnits) {
      if (unit == name) {
        scale = factor;
        found = true;
      }
    }
    if (!found) throw sim::ConfigError(std::string(key), "\"" + copy + "\"", valid);
  }
  const double bytes = number * scale;
  if (!(bytes >= 1 && bytes <= kMaxBytes) || bytes != std::floor(bytes)) {
    throw sim::ConfigError(std::string(key), "\"" + copy + "\"", valid);
  }
  return bytes;
}

std::string format_bytes(double bytes) {
  constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  double value = bytes;
  while (i + 1 < kNames.size() && value >= 1024.0) {
    value /= 1024.0;
    ++i;
  }
  return fmt::format("{:g} {}", value, kNames[i]);
}

}  // namespace megasim::scenarios
