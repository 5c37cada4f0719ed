#include "scenarios/config/json_dom_builder.h"

#include <utility>

namespace megasim::scenarios {

void JsonDomBuilder::add(JsonValue v) {
  if (open_.empty()) {
    root_ = std::move(v);
    done_ = true;
    return;
  }
  Open& parent = open_.back();
  if (parent.value.kind == JsonValue::Kind::kArray) {
    parent.value.items.push_back(std::move(v));
  } else {
    parent.value.members.emplace_back(std::move(parent.key), std::move(v));
  }
}

void JsonDomBuilder::value(JsonValue v) {
  add(std::move(v));
}

void JsonDomBuilder::open(JsonValue::Kind kind) {
  open_.emplace_back();
  open_.back().value.kind = kind;
}

void JsonDomBuilder::close() {
  JsonValue v = std::move(open_.back().value);
  open_.pop_back();
  add(std::move(v));
}

bool JsonDomBuilder::key(std::string_view key) {
  Open& object = open_.back();
  if (object.value.find(key) != nullptr) return false;
  object.key.assign(key);
  return true;
}

}  // namespace megasim::scenarios
