#include "scenarios/config/keys_json.h"

#include <variant>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/keys.h"

namespace megasim::scenarios {

std::string keys_json() {
  const Scenario defaults;
  JsonWriter w;
  w.begin_object().key("keys").begin_array();
  for (const KeySpec& k : key_table()) {
    w.begin_object();
    w.field("key", k.full_name()).field("section", k.section).field("name", k.name).field("type", to_string(k.type));
    w.key("default");
    std::visit([&w](const auto& x) { w.value(x); }, k.get(defaults));
    w.field("unit", k.unit).field("description", k.description).field("choices", k.choices);
    if (k.type == ValueType::kInt || k.type == ValueType::kFloat) {
      // The physical range the table checks on every set (keys.h); or_zero: 0 is valid besides it.
      w.key("range").begin_object().field("min", k.range.min).field("max", k.range.max);
      w.field("or_zero", k.range.or_zero).end_object();
    }
    w.end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
