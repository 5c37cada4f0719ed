#include "scenarios/config/json_sax.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

#include "scenarios/config/json_reader.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::string_view kEscapes = "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX";
constexpr std::string_view kHexDigits = "four hex digits after \\u";
constexpr std::string_view kLowSurrogate = "a low surrogate after a high one";
constexpr std::string_view kControl = "an escaped control character";

// Where a \u escape at `at` (its backslash, where RapidJSON reports every error of one) goes wrong:
// at the first byte that is not a hex digit, else (a high surrogate) where the "\u" of its low one
// should be, else after the four digits of what is not a low surrogate.
std::pair<std::size_t, std::string_view> unicode_escape_error(std::string_view text, std::size_t at) {
  // The offset after the hex digits from `from` (at most four).
  const auto hex4 = [text](std::size_t from) {
    std::size_t i = from;
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
    while (i < from + 4 && i < text.size() && hex(text[i])) ++i;
    return i;
  };
  const std::size_t after_high = hex4(at + 2);
  if (after_high != at + 6) return {after_high, kHexDigits};
  if (text.substr(at + 6, 2) != "\\u") return {at + 6, kLowSurrogate};
  const std::size_t after_low = hex4(at + 8);
  if (after_low != at + 12) return {after_low, kHexDigits};
  return {after_low, kLowSurrogate};
}

// Where RapidJSON's ValueInvalid at `at` is about: the start of a literal ("true", "false",
// "null") cut short there, which RapidJSON reports where the literal stopped matching.
std::size_t literal_start(std::string_view text, std::size_t at) {
  for (std::size_t length = 4; length >= 1; --length) {
    if (at < length) continue;
    const std::string_view head = text.substr(at - length, length);
    for (const std::string_view literal : {"true", "false", "null"}) {
      if (literal.substr(0, length) == head && literal.size() > length) return at - length;
    }
  }
  return at;
}

}  // namespace

std::string JsonText::where(std::size_t offset) const {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}:{}", source_, line, column);
}

std::string JsonText::expected_at(std::size_t offset, std::string_view expected) const {
  const std::string found = offset < text_.size() ? fmt::format("'{}'", text_[offset]) : "the end of the input";
  return fmt::format("{}: expected {}, found {}", where(offset), expected, found);
}

std::string JsonText::syntax_error(rapidjson::ParseErrorCode code, std::size_t offset) const {
  // RapidJSON takes a '\0' for the end of the text: inside a string, it is a control character.
  const bool inside = offset < text_.size();
  switch (code) {
    case rapidjson::kParseErrorDocumentEmpty:
      return expected_at(offset, "a JSON value");
    case rapidjson::kParseErrorDocumentRootNotSingular:
      return expected_at(offset, "the end of the document");
    case rapidjson::kParseErrorValueInvalid:
      return expected_at(literal_start(text_, offset), "a JSON value");
    case rapidjson::kParseErrorObjectMissName:
      return expected_at(offset, "a string key");
    case rapidjson::kParseErrorObjectMissColon:
      return expected_at(offset, "':'");
    case rapidjson::kParseErrorObjectMissCommaOrCurlyBracket:
      return expected_at(offset, "',' or '}'");
    case rapidjson::kParseErrorArrayMissCommaOrSquareBracket:
      return expected_at(offset, "',' or ']'");
    case rapidjson::kParseErrorStringUnicodeEscapeInvalidHex:
    case rapidjson::kParseErrorStringUnicodeSurrogateInvalid: {
      const auto [at, expected] = unicode_escape_error(text_, offset);
      return expected_at(at, expected);
    }
    case rapidjson::kParseErrorStringEscapeInvalid:
      // At the backslash of an unknown escape (the error is the byte after it), or at a control byte.
      return inside && text_[offset] == '\\' ? expected_at(offset + 1, kEscapes) : expected_at(offset, kControl);
    case rapidjson::kParseErrorStringMissQuotationMark:
      return expected_at(offset, inside ? kControl : "'\"' closing the string");
    case rapidjson::kParseErrorNumberTooBig:
      return expected_at(offset, "a number within the range of a double");
    case rapidjson::kParseErrorNumberMissFraction:
      return expected_at(offset, "a digit after '.'");
    case rapidjson::kParseErrorNumberMissExponent:
      return expected_at(offset, "a digit in the exponent");
    default:  // not raised with kJsonParseFlags (encoding checks, comments, handler stops)
      return expected_at(offset, fmt::format("valid JSON ({})", static_cast<int>(code)));
  }
}

bool JsonChecks::open_container() {
  if (++depth_ <= kMaxJsonDepth) return true;
  return fail_expected(bracket_offset(), "at most 256 nested arrays and objects");
}

bool JsonChecks::new_key(std::string_view key) {
  for (std::size_t i = key_starts_.back(); i < keys_used_; ++i) {
    if (keys_[i] == key) return duplicate(key);
  }
  if (keys_used_ == keys_.size()) keys_.emplace_back();
  keys_[keys_used_++].assign(key);
  return true;
}

bool JsonChecks::duplicate(std::string_view key) {
  return fail_expected(offset(), fmt::format("a key other than the duplicate \"{}\"", key));
}

bool JsonChecks::convert_number(double& x) {
  const std::string_view text = text_.text();
  const char* const begin = text.data() + offset();
  const char* const last = text.data() + text.size();
  const auto is_digit = [last](const char* q) { return q < last && *q >= '0' && *q <= '9'; };
  // The number's grammar, which RapidJSON has checked: -?digits(.digits)?([eE][+-]?digits)?
  const char* p = begin;
  const bool negative = *p == '-';
  if (negative) ++p;
  // The digits as one integer (wrapping past 19 digits, when it is not used).
  std::uint64_t m = 0;
  std::size_t count = 0;
  for (; is_digit(p); ++p, ++count) m = m * 10 + static_cast<std::uint64_t>(*p - '0');
  std::size_t fraction = 0;
  if (p < last && *p == '.') {
    for (++p; is_digit(p); ++p, ++fraction) m = m * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  bool exponent = false;
  if (p < last && (*p == 'e' || *p == 'E')) {
    exponent = true;
    ++p;
    if (p < last && (*p == '+' || *p == '-')) ++p;
    while (is_digit(p)) ++p;
  }
  if (!exponent && count + fraction <= 15) {
    // Clinger's fast path: the digits as an integer below 2^53 and a power of ten up to 1e15 are both
    // exact, so one division rounds correctly, to the double from_chars would give.
    static constexpr std::array<double, 16> kPowers{1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    x = static_cast<double>(m) / kPowers[fraction];
    if (negative) x = -x;
    return true;
  }
  // Out of range (ERANGE: overflow, or underflow to zero) is an error, as is infinity.
  const auto [end, ec] = std::from_chars(begin, p, x);
  if (ec == std::errc() && end == p && std::isfinite(x)) return true;
  return fail_expected(offset(), "a number within the range of a double");
}

bool JsonChecks::fail_expected(std::size_t at, std::string_view expected) {
  return fail(text_.expected_at(at, expected));
}

bool JsonChecks::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
  return false;
}

void throw_json_error(const JsonText& text, const JsonChecks& handler, const rapidjson::ParseResult& result,
                      std::size_t stopped_at) {
  if (!handler.error().empty()) throw sim::ConfigError(handler.error());
  if (result.IsError()) throw sim::ConfigError(text.syntax_error(result.Code(), result.Offset()));
  throw sim::ConfigError(text.expected_at(stopped_at, "the end of the document"));
}

}  // namespace megasim::scenarios
