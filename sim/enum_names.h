// Text names of enums, for parsing user input and printing reports. Each enum keeps one table of
// (name, value) pairs; parsing an unknown name throws ConfigError naming the key and listing the
// valid names, so every enum-valued key reports bad input the same way.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "sim/error.h"

namespace megasim::sim {

template <typename Enum, std::size_t N>
using EnumNames = std::array<std::pair<std::string_view, Enum>, N>;

// "one of a, b, c": the valid names, for error messages.
template <typename Enum, std::size_t N>
std::string valid_names(const EnumNames<Enum, N>& names) {
  std::string valid;
  for (const auto& entry : names) {
    valid += valid.empty() ? "one of " : ", ";
    valid += entry.first;
  }
  return valid;
}

template <typename Enum, std::size_t N>
Enum parse_enum(const EnumNames<Enum, N>& names, std::string_view text, std::string_view key) {
  for (const auto& [name, value] : names) {
    if (name == text) return value;
  }
  throw ConfigError(std::string(key), std::string(text), valid_names(names));
}

template <typename Enum, std::size_t N>
std::string_view enum_name(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  MEGASIM_ASSERT(false, "enum value without a name");
  return {};
}

}  // namespace megasim::sim
