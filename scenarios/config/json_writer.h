// A small streaming JSON writer with stable key order, used by every report. Doubles are written in
// the shortest form that round-trips (so equal inputs give byte-identical files); NaN and infinity,
// which JSON cannot hold, are written as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace megasim::scenarios {

class JsonWriter {
 public:
  // indent = 0 writes one line; otherwise pretty-prints with that many spaces per level.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(double x);
  JsonWriter& value(std::int64_t x);
  JsonWriter& value(int x) { return value(static_cast<std::int64_t>(x)); }
  JsonWriter& value(std::uint64_t x);
  JsonWriter& value(bool x);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& null();
  // key + value in one call.
  template <typename T>
  JsonWriter& field(std::string_view name, const T& x) {
    key(name);
    return value(x);
  }

  // The document so far; complete once every begin_* has its end_*.
  [[nodiscard]] const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();

  std::string out_;
  int indent_;
  std::vector<bool> first_in_scope_;
  bool after_key_ = false;
};

std::string json_escape(std::string_view text);

}  // namespace megasim::scenarios
