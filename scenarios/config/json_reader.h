// A small strict JSON reader (RFC 8259) for the files megasim writes itself (Perfetto traces with
// their "megasim" object): a DOM of null, bool, number, string, array and object. RapidJSON's SAX
// reader does the tokenizing and json_sax.h the checks on top of it, shared with the streaming
// trace reader (trace_events.h); the writer side is json_writer.h.
// Strict: no comments, trailing commas, NaN, leading zeros or duplicate keys; at most 256 arrays and
// objects nested (kMaxJsonDepth). Numbers are finite doubles, correctly rounded (integers exact up
// to 2^53). Strings are byte strings, \uXXXX escapes (surrogate pairs included) decoded to UTF-8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace megasim::scenarios {

// The most arrays and objects the readers accept nested in one another.
inline constexpr int kMaxJsonDepth = 256;

struct JsonValue {
  enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;                                        // kString
  std::vector<JsonValue> items;                            // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in file order

  // Declared here and defaulted in json_reader.cc: this type holds vectors of itself, whose
  // special members Clang (with libstdc++) can only instantiate once the type is complete.
  JsonValue();
  JsonValue(const JsonValue&);
  JsonValue(JsonValue&&) noexcept;
  JsonValue& operator=(const JsonValue&);
  JsonValue& operator=(JsonValue&&) noexcept;
  ~JsonValue();

  // The member named `key` of an object; nullptr when absent or not an object.
  [[nodiscard]] const JsonValue* find(std::string_view key) const;
};

// Parses one JSON text. Throws sim::ConfigError("SOURCE:LINE:COLUMN: expected <what>, found <the
// byte there | the end of the input>") for malformed input (line and column 1-based, the column
// counted in bytes), e.g. "expected a key other than the duplicate \"k\"" at a repeated key.
JsonValue parse_json(std::string_view text, std::string_view source = "<string>");

// The integer a JSON number stands for, when it is one a double holds exactly (|x| <= 2^53);
// converting a larger or fractional double to an integer type would be undefined.
std::optional<std::int64_t> exact_integer(double x);

}  // namespace megasim::scenarios
