#include "scenarios/json_reader.h"

#include <fmt/format.h>

#include <cmath>

#include "scenarios/json_lexer.h"

namespace megasim::scenarios {
namespace {

JsonValue object(JsonLexer& in, int depth) {
  JsonValue v;
  v.kind = JsonValue::Kind::kObject;
  in.advance();
  std::string key;
  for (bool first = true; in.next_element('}', first);) {
    const std::size_t key_at = in.member_key(key);
    if (v.find(key) != nullptr) in.fail_at(key_at, fmt::format("a key other than the duplicate \"{}\"", key));
    in.expect(':', "':'");
    JsonValue member = parse_json_value(in, depth + 1);
    v.members.emplace_back(std::move(key), std::move(member));
  }
  return v;
}

JsonValue array(JsonLexer& in, int depth) {
  JsonValue v;
  v.kind = JsonValue::Kind::kArray;
  in.advance();
  for (bool first = true; in.next_element(']', first);) v.items.push_back(parse_json_value(in, depth + 1));
  return v;
}

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

JsonValue parse_json_value(JsonLexer& in, int depth) {
  if (depth > kMaxJsonDepth) in.fail("at most 256 nested arrays and objects");
  JsonValue v;
  switch (in.peek()) {
    case '{':
      return object(in, depth);
    case '[':
      return array(in, depth);
    case '"':
      v.kind = JsonValue::Kind::kString;
      in.string(v.text);
      return v;
    case 't':
      in.literal("true");
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return v;
    case 'f':
      in.literal("false");
      v.kind = JsonValue::Kind::kBool;
      return v;
    case 'n':
      in.literal("null");
      return v;
    default:
      v.kind = JsonValue::Kind::kNumber;
      v.number = in.number();
      return v;
  }
}

JsonValue parse_json(std::string_view text, std::string_view source) {
  JsonLexer in(text, source);
  JsonValue v = parse_json_value(in, 0);
  if (!in.at_end()) in.fail("the end of the document");
  return v;
}

std::optional<std::int64_t> exact_integer(double x) {
  constexpr double kLargestExact = 9007199254740992.0;  // 2^53
  if (!(std::fabs(x) <= kLargestExact) || x != std::floor(x)) return std::nullopt;
  return static_cast<std::int64_t>(x);
}

}  // namespace megasim::scenarios
