#include "scenarios/config/embedded_scenario.h"

#include <fmt/format.h>

#include <optional>
#include <variant>

#include "models/plan.h"
#include "scenarios/config/keys.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw sim::ConfigError(fmt::format("{}: {}", source, what));
}

}  // namespace

void write_scenario_keys(JsonWriter& w, const Scenario& scenario) {
  w.begin_object();
  for (const KeySpec& key : key_table()) {
    w.key(key.full_name());
    std::visit([&w](const auto& x) { w.value(x); }, key.get(scenario));
  }
  w.end_object();
}

std::string scenario_keys_json(const Scenario& scenario) {
  JsonWriter w(0);
  write_scenario_keys(w, scenario);
  return w.str();
}

Scenario scenario_from_keys(const JsonValue& keys, std::string_view source) {
  Scenario s;
  for (const auto& [name, json] : keys.members) {
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos) fail(source, fmt::format("scenario key \"{}\" is not section.key", name));
    const KeySpec& key = find_key(std::string_view(name).substr(0, dot), std::string_view(name).substr(dot + 1));
    Value value;
    switch (json.kind) {
      case Kind::kNull:
        continue;  // a non-finite number: the default stands
      case Kind::kBool:
        value = json.boolean;
        break;
      case Kind::kString:
        value = json.text;
        break;
      case Kind::kNumber: {
        const std::optional<std::int64_t> whole = exact_integer(json.number);
        if (key.type == ValueType::kInt && whole) {
          value = *whole;
        } else {
          value = json.number;  // coerce() refuses a fractional or too large value for an int key
        }
        break;
      }
      default:
        fail(source, fmt::format("scenario key \"{}\" has no scalar value", name));
    }
    key.set(s, coerce(key, value));
  }
  return s;
}

models::Workload recorded_workload(const Scenario& s) {
  return models::build_workload(s.model,
                                models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server));
}

}  // namespace megasim::scenarios
