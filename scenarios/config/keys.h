// The one table of scenario keys (STYLE.md §5): every key has a section, a name, a type, a unit,
// a one-line description and its default (read from a default-constructed Scenario), and knows how
// to set itself on a Scenario. The TOML loader, `--set`, `megasim keys` and the docs all use it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

enum class ValueType : std::uint8_t { kInt, kFloat, kBool, kString };
std::string_view to_string(ValueType type);

using Value = std::variant<std::int64_t, double, bool, std::string>;
// The value as a user would write it in TOML (strings quoted).
std::string format_value(const Value& value);

// The physical range of a numeric key, checked whenever the key is set (TOML, --set, Python): a value
// in [min, max], or exactly 0 when `or_zero` (a sentinel the description explains: "0: from the
// device", "0: never"). NaN and infinities are outside every range. The bounds are physics, with room
// to spare (a NIC of 1e12 Gb/s, a latency of a year, an efficiency of 1e-300 are not), and chosen so
// that no value in range can overflow the simulation's arithmetic by itself (sim/time.h checks what
// the values do together). Integer bounds are below 2^53, so they are exact as doubles.
struct KeyRange {
  double min = 0;
  double max = 0;
  bool or_zero = false;

  [[nodiscard]] bool contains(const Value& value) const;
  // "an integer from 1 to 16777214 GPUs", "0, or a number from 0.01 to 100000 Gb/s".
  [[nodiscard]] std::string describe(std::string_view unit, bool integer) const;
};

struct KeySpec {
  std::string_view section;
  std::string_view name;
  ValueType type;
  std::string_view unit;  // "" when dimensionless
  std::string_view description;
  std::string_view choices;  // for strings: "a|b|c"; empty otherwise
  // Sets the key; the Value already has the key's type. Throws sim::ConfigError for a bad choice.
  std::function<void(Scenario&, const Value&)> set;
  std::function<Value(const Scenario&)> get;
  KeyRange range = {};  // integer and number keys only (see above); set() checks it

  [[nodiscard]] std::string full_name() const;
};

const std::vector<KeySpec>& key_table();

// Finds "section.key"; throws sim::ConfigError naming the key and listing the valid keys of the
// section (or the valid sections) when it does not exist.
const KeySpec& find_key(std::string_view section, std::string_view name);

// Converts a value to the key's type: an integer is accepted for a float key; anything else that
// does not match throws sim::ConfigError(key, value, "<type>").
Value coerce(const KeySpec& key, const Value& value);

// A readable table of every key: name, type, default, unit, description and, for numbers, the range.
std::string describe_keys();

}  // namespace megasim::scenarios
