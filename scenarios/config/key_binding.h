// Helpers that bind a KeySpec to a field of the Scenario through member pointers, so each entry of
// the key table is one line of data rather than a hand-written setter and getter.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "scenarios/config/keys.h"
#include "sim/error.h"
#include "sim/time.h"

namespace megasim::scenarios::binding {

template <typename T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return ValueType::kBool;
  else if constexpr (std::is_integral_v<T>)
    return ValueType::kInt;
  else if constexpr (std::is_floating_point_v<T>)
    return ValueType::kFloat;
  else
    return ValueType::kString;
}

// A key stored as-is in field `field` of sub-struct `sub` of the Scenario: a boolean or a string
// (numbers take the overload with their range below).
template <typename Sub, typename Field>
KeySpec field(std::string_view section, std::string_view name, std::string_view unit, std::string_view description,
              Sub Scenario::*sub, Field Sub::*member) {
  constexpr ValueType type = value_type_of<Field>();
  static_assert(type == ValueType::kBool || type == ValueType::kString, "a numeric key needs its physical range");
  KeySpec spec{section, name, type, unit, description, {}, {}, {}};
  spec.set = [sub, member](Scenario& s, const Value& v) {
    if constexpr (type == ValueType::kBool) {
      (s.*sub).*member = std::get<bool>(v);
    } else {
      (s.*sub).*member = std::get<std::string>(v);
    }
  };
  spec.get = [sub, member](const Scenario& s) -> Value { return (s.*sub).*member; };
  return spec;
}

// A numeric key stored as-is, within `range` (keys.h; the table checks it before set() runs, and an
// integer key's range must fit its field's type, asserted here, so the cast cannot truncate).
template <typename Sub, typename Field>
KeySpec field(std::string_view section, std::string_view name, std::string_view unit, std::string_view description,
              Sub Scenario::*sub, Field Sub::*member, KeyRange range) {
  constexpr ValueType type = value_type_of<Field>();
  static_assert(type == ValueType::kInt || type == ValueType::kFloat, "only numeric keys have a range");
  if constexpr (type == ValueType::kInt) {
    MEGASIM_ASSERT(range.min >= static_cast<double>(std::numeric_limits<Field>::lowest()) &&
                       range.max <= static_cast<double>(std::numeric_limits<Field>::max()),
                   "an integer key's range fits its field's type");
  }
  KeySpec spec{section, name, type, unit, description, {}, {}, {}, range};
  spec.set = [sub, member](Scenario& s, const Value& v) {
    if constexpr (type == ValueType::kInt) {
      (s.*sub).*member = static_cast<Field>(std::get<std::int64_t>(v));
    } else {
      (s.*sub).*member = static_cast<Field>(std::get<double>(v));
    }
  };
  spec.get = [sub, member](const Scenario& s) -> Value {
    if constexpr (type == ValueType::kInt)
      return static_cast<std::int64_t>((s.*sub).*member);
    else
      return static_cast<double>((s.*sub).*member);
  };
  return spec;
}

// A string key naming a value of the enum field `member`: parse(text, "section.name") throws the
// ConfigError for an unknown name, and to_string (found by argument-dependent lookup) names it back.
template <typename Sub, typename Enum, typename Parse>
KeySpec enum_field(std::string_view section, std::string_view name, std::string_view choices,
                   std::string_view description, Sub Scenario::*sub, Enum Sub::*member, Parse parse) {
  KeySpec spec{section, name, ValueType::kString, "", description, choices, {}, {}};
  spec.set = [sub, member, parse, key = std::string(section) + "." + std::string(name)](Scenario& s, const Value& v) {
    (s.*sub).*member = parse(std::get<std::string>(v), key);
  };
  spec.get = [sub, member](const Scenario& s) -> Value { return std::string(to_string((s.*sub).*member)); };
  return spec;
}

// A float key in `unit` (seconds or microseconds) within `range` (in that unit), stored as SimTime
// nanoseconds.
template <typename Sub>
KeySpec duration(std::string_view section, std::string_view name, std::string_view unit, std::string_view description,
                 Sub Scenario::*sub, sim::SimTime Sub::*member, double ns_per_unit, KeyRange range) {
  KeySpec spec{section, name, ValueType::kFloat, unit, description, {}, {}, {}, range};
  spec.set = [sub, member, ns_per_unit](Scenario& s, const Value& v) {
    (s.*sub).*member = static_cast<sim::SimTime>(std::get<double>(v) * ns_per_unit + 0.5);  // the range bounds it
  };
  spec.get = [sub, member, ns_per_unit](const Scenario& s) -> Value {
    return static_cast<double>((s.*sub).*member) / ns_per_unit;
  };
  return spec;
}

}  // namespace megasim::scenarios::binding
