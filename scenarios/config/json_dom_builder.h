// Builds the JsonValue (json_reader.h) of one value from its SAX events (json_sax.h), in file
// order: parse_json's whole document, and the "megasim" member of a trace (trace_events.h). The
// handler that feeds it checks the text (depth, numbers); the builder checks duplicate keys.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/json_reader.h"

namespace megasim::scenarios {

class JsonDomBuilder {
 public:
  // A scalar value, or a container opening (kArray or kObject) and closing.
  void value(JsonValue v);
  void open(JsonValue::Kind kind);
  void close();
  // The key of the next member of the innermost open object; false when that object has it already.
  bool key(std::string_view key);

  // Whether the value is complete (then take() gives it).
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] JsonValue take() { return std::move(root_); }

 private:
  struct Open {
    JsonValue value;
    std::string key;  // an object's member being read
  };
  void add(JsonValue v);

  std::vector<Open> open_;  // innermost last
  JsonValue root_;
  bool done_ = false;
};

}  // namespace megasim::scenarios
