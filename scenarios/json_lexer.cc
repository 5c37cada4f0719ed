#include "scenarios/json_lexer.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

}  // namespace

std::string JsonLexer::where(std::size_t offset) const {
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

void JsonLexer::fail_at(std::size_t offset, std::string_view expected) const {
  const std::string found = offset < text_.size() ? fmt::format("'{}'", text_[offset]) : "the end of the input";
  throw sim::ConfigError(fmt::format("{}: expected {}, found {}", where(offset), expected, found));
}

void JsonLexer::expect(char c, std::string_view what) {
  if (peek() != c) fail(what);
  ++pos_;
}

void JsonLexer::literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) fail("a JSON value");
  pos_ += word.size();
}

bool JsonLexer::next_element(char close, bool& first) {
  if (first) {
    first = false;
    if (peek() != close) return true;
    ++pos_;
    return false;
  }
  if (peek() == ',') {
    ++pos_;
    return true;
  }
  expect(close, close == '}' ? "',' or '}'" : "',' or ']'");
  return false;
}

std::size_t JsonLexer::member_key(std::string& key) {
  if (peek() != '"') fail("a string key");
  const std::size_t at = pos_;
  string(key);
  return at;
}

double JsonLexer::number() {
  const char* const data = text_.data();
  const char* const last = data + text_.size();
  const char* p = data + pos_;
  const auto is_digit = [last](const char* q) { return q < last && *q >= '0' && *q <= '9'; };
  const auto fail_here = [&](std::string_view expected) {
    pos_ = static_cast<std::size_t>(p - data);
    fail(expected);
  };
  const char* const begin = p;
  const bool negative = p < last && *p == '-';
  if (negative) ++p;
  // The digits as one integer (wrapping past 19 digits, when it is not used).
  std::uint64_t m = 0;
  std::size_t count = 0;
  if (p < last && *p == '0') {
    ++p;  // a leading zero stands alone
    count = 1;
  } else {
    if (!is_digit(p)) fail_here("a JSON value");
    for (; is_digit(p); ++p, ++count) m = m * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  std::size_t fraction = 0;
  if (p < last && *p == '.') {
    ++p;
    for (; is_digit(p); ++p, ++fraction) m = m * 10 + static_cast<std::uint64_t>(*p - '0');
    if (fraction == 0) fail_here("a digit after '.'");
  }
  bool exponent = false;
  if (p < last && (*p == 'e' || *p == 'E')) {
    exponent = true;
    ++p;
    if (p < last && (*p == '+' || *p == '-')) ++p;
    if (!is_digit(p)) fail_here("a digit in the exponent");
    while (is_digit(p)) ++p;
  }
  pos_ = static_cast<std::size_t>(p - data);
  if (!exponent && count + fraction <= 15) {
    // Clinger's fast path: the digits as an integer below 2^53 and a power of ten up to 1e15 are both
    // exact, so one division rounds correctly, to the double from_chars would give.
    static constexpr std::array<double, 16> kPowers{1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const double x = static_cast<double>(m) / kPowers[fraction];
    return negative ? -x : x;
  }
  double x = 0;
  const auto [end, ec] = std::from_chars(begin, p, x);
  if (ec != std::errc() || end != p || !std::isfinite(x)) {
    fail_at(static_cast<std::size_t>(begin - data), "a number within the range of a double");
  }
  return x;
}

std::uint32_t JsonLexer::hex4() {
  std::uint32_t code = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    const char c = current();
    code <<= 4;
    if (c >= '0' && c <= '9') {
      code |= static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      code |= static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      code |= static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      fail("four hex digits after \\u");
    }
  }
  return code;
}

void JsonLexer::string(std::string& out) {
  out.clear();
  ++pos_;  // the opening quote
  while (true) {
    // The run of bytes that stand for themselves, appended at once.
    const char* const run = text_.data() + pos_;
    const char* const last = text_.data() + text_.size();
    const char* p = run;
    while (p < last && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
    out.append(run, static_cast<std::size_t>(p - run));
    pos_ = static_cast<std::size_t>(p - text_.data());
    if (pos_ >= text_.size()) fail("'\"' closing the string");
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c != '\\') fail("an escaped control character");
    ++pos_;
    const char e = current();
    ++pos_;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        std::uint32_t code = hex4();
        if (code >= 0xD800 && code < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
          pos_ += 2;
          const std::uint32_t low = hex4();
          if (low < 0xDC00 || low >= 0xE000) fail("a low surrogate after a high one");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, code);
        break;
      }
      default:
        --pos_;
        fail("an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX");
    }
  }
}

}  // namespace megasim::scenarios
