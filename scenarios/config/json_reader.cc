#include "scenarios/config/json_reader.h"

#include <cmath>
#include <string_view>
#include <utility>

#include "scenarios/config/json_dom_builder.h"
#include "scenarios/config/json_sax.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

// RapidJSON's events into a JsonDomBuilder, checked as json_sax.h says.
class DomHandler : public JsonHandler<DomHandler> {
 public:
  using JsonHandler::JsonHandler;

  bool Null() { return scalar(JsonValue()); }
  bool Bool(bool b) {
    JsonValue v;
    v.kind = Kind::kBool;
    v.boolean = b;
    return scalar(std::move(v));
  }
  bool Number(double x) {
    JsonValue v;
    v.kind = Kind::kNumber;
    v.number = x;
    return scalar(std::move(v));
  }
  bool String(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    JsonValue v;
    v.kind = Kind::kString;
    v.text.assign(text, length);
    return scalar(std::move(v));
  }
  bool StartObject() { return open(Kind::kObject); }
  bool Key(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    const std::string_view key(text, length);
    return builder_.key(key) || duplicate(key);
  }
  bool EndObject(rapidjson::SizeType /*members*/) { return close(); }
  bool StartArray() { return open(Kind::kArray); }
  bool EndArray(rapidjson::SizeType /*items*/) { return close(); }

  JsonValue take() { return builder_.take(); }

 private:
  bool scalar(JsonValue v) {
    builder_.value(std::move(v));
    return true;
  }
  bool open(Kind kind) {
    if (!open_container()) return false;
    builder_.open(kind);
    return true;
  }
  bool close() {
    close_container();
    builder_.close();
    return true;
  }

  JsonDomBuilder builder_;
};

}  // namespace

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

JsonValue parse_json(std::string_view text, std::string_view source) {
  const JsonText in(text, source);
  DomHandler handler(in);
  parse_json_text(in, handler);
  return handler.take();
}

std::optional<std::int64_t> exact_integer(double x) {
  constexpr double kLargestExact = 9007199254740992.0;  // 2^53
  if (!(std::fabs(x) <= kLargestExact) || x != std::floor(x)) return std::nullopt;
  return static_cast<std::int64_t>(x);
}

}  // namespace megasim::scenarios
