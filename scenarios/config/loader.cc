#include "scenarios/config/loader.h"

#include <toml++/toml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "scenarios/config/input_file.h"
#include "scenarios/config/keys.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

std::string describe_node_type(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    default:
      return "a value";
  }
}

Value value_of(const toml::node& node, const std::string& key) {
  if (auto v = node.as_integer()) return v->get();
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_boolean()) return v->get();
  if (auto v = node.as_string()) return v->get();
  throw sim::ConfigError(key, "(" + describe_node_type(node) + ")", "a single integer, number, boolean or string");
}

void apply_table(Scenario& scenario, const toml::table& root) {
  for (const auto& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      throw sim::ConfigError(section, "(a bare key)", "keys inside sections such as [cluster] or [fabric]");
    }
    for (const auto& [name_key, node] : *table) {
      const KeySpec& spec = find_key(section, name_key.str());
      spec.set(scenario, coerce(spec, value_of(node, spec.full_name())));
    }
  }
}

// " (the value of section.key)" for the `key = value` line `line` (1-based) of a TOML text, found
// with the [section] header above it; "" when the line is not such a line. For TOML++'s errors, which
// name a position (an integer beyond 64 bits: "not representable in 64 bits") but not the key.
std::string key_at_line(std::string_view text, std::size_t line) {
  std::string section;
  std::size_t number = 1;
  for (std::size_t at = 0; at <= text.size() && number <= line; ++number) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(at, end - at);
    at = end + 1;
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
    if (l.starts_with('[')) {
      const std::size_t close = l.find(']');
      if (close != std::string_view::npos) section = std::string(l.substr(1, close - 1));
      continue;
    }
    if (number != line) continue;
    const std::size_t eq = l.find('=');
    if (eq == std::string_view::npos) return "";
    std::string_view name = l.substr(0, eq);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty()) return "";
    return " (the value of " + (section.empty() ? "" : section + ".") + std::string(name) + ")";
  }
  return "";
}

Value parse_text_as(const KeySpec& spec, std::string_view text) {
  const std::string full = spec.full_name();
  const std::string quoted = "\"" + std::string(text) + "\"";
  switch (spec.type) {
    case ValueType::kInt: {
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
      if (ec == std::errc::result_out_of_range) {
        // Refused, not clamped: a seed of 2^64 is not INT64_MAX.
        throw sim::ConfigError(full, quoted, spec.range.describe(spec.unit, true));
      }
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        throw sim::ConfigError(full, quoted, "an integer");
      }
      return x;
    }
    case ValueType::kFloat: {
      const std::string copy(text);
      char* end = nullptr;
      const double x = std::strtod(copy.c_str(), &end);
      if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(x)) {
        throw sim::ConfigError(full, quoted, "a finite number");
      }
      return x;
    }
    case ValueType::kBool:
      if (text == "true") return true;
      if (text == "false") return false;
      throw sim::ConfigError(full, quoted, "true or false");
    case ValueType::kString:
      if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
      return std::string(text);
  }
  return std::string(text);
}

}  // namespace

void apply_toml_text(Scenario& scenario, std::string_view toml_text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw sim::ConfigError(std::string(source) + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                           ": malformed TOML: " + std::string(e.description()) +
                           key_at_line(toml_text, static_cast<std::size_t>(where.line)));
  }
  apply_table(scenario, root);
}

Scenario load_scenario_text(std::string_view toml_text, std::string_view source) {
  Scenario scenario;
  apply_toml_text(scenario, toml_text, source);
  return scenario;
}

Scenario load_scenario_file(const std::string& path) {
  Scenario scenario = load_scenario_text(read_input_file(path, "scenario", "a readable TOML file"), path);
  scenario.source_file = path;
  // A calibration file named in a scenario file is found next to it, wherever the run starts.
  const std::filesystem::path calibration(scenario.calibration_file);
  if (!scenario.calibration_file.empty() && calibration.is_relative()) {
    scenario.calibration_file = (std::filesystem::path(path).parent_path() / calibration).lexically_normal().string();
  }
  return scenario;
}

void apply_override(Scenario& scenario, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  const std::string_view lhs = assignment.substr(0, eq);
  const std::size_t dot = lhs.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot == 0 || dot + 1 == lhs.size()) {
    throw sim::ConfigError("--set", "\"" + std::string(assignment) + "\"", "section.key=value, e.g. cluster.gpus=4096");
  }
  const KeySpec& spec = find_key(lhs.substr(0, dot), lhs.substr(dot + 1));
  spec.set(scenario, parse_text_as(spec, assignment.substr(eq + 1)));
}

void apply_overrides(Scenario& scenario, const std::vector<std::string>& assignments) {
  for (const std::string& a : assignments) apply_override(scenario, a);
}

}  // namespace megasim::scenarios
