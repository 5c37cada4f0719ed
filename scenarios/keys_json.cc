#include "scenarios/keys_json.h"

#include <variant>

#include "scenarios/json_writer.h"
#include "scenarios/keys.h"

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
    w.end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace megasim::scenarios
