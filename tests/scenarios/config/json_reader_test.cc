// The strict JSON reader: every kind of value, escapes, what json_writer.h writes reads back, and
// each kind of malformed input is an error naming its line and column.
#include "scenarios/config/json_reader.h"
#include "tests/scenarios/text_position.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scenarios/config/json_writer.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

TEST(JsonReader, ReadsEveryKindOfValue) {
  const JsonValue v =
      parse_json(R"( {"a": [1, -2.5e3, 0.125, true, false, null], "b": {"c": "x\"y\\z\u00e9\ud83d\ude00\n"},
    "e": [], "f": {}} )");
  ASSERT_EQ(v.kind, Kind::kObject);
  const JsonValue* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 6u);
  EXPECT_EQ(a->items[0].number, 1);
  EXPECT_EQ(a->items[1].number, -2500);
  EXPECT_EQ(a->items[2].number, 0.125);
  EXPECT_TRUE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, Kind::kBool);
  EXPECT_FALSE(a->items[4].boolean);
  EXPECT_EQ(a->items[5].kind, Kind::kNull);
  EXPECT_EQ(v.find("b")->find("c")->text, "x\"y\\z\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_EQ(v.find("e")->kind, Kind::kArray);
  EXPECT_TRUE(v.find("f")->members.empty());
  EXPECT_EQ(v.find("zz"), nullptr);
  EXPECT_EQ(a->find("a"), nullptr);
}

TEST(JsonReader, ReadsBackWhatTheWriterWrites) {
  JsonWriter w;
  w.begin_object().field("t", 0.1 + 0.2).field("n", std::int64_t{1} << 52).field("s", "tab\there");
  w.key("l").begin_array().value(1.5e-9).value(true).end_array().end_object();
  const JsonValue v = parse_json(w.str());
  EXPECT_EQ(v.find("t")->number, 0.1 + 0.2);
  EXPECT_EQ(v.find("n")->number, static_cast<double>(std::int64_t{1} << 52));
  EXPECT_EQ(v.find("s")->text, "tab\there");
  EXPECT_EQ(v.find("l")->items[0].number, 1.5e-9);
}

// Numbers read as std::from_chars reads them (correctly rounded), the short decimals of a trace's
// microseconds on the reader's fast path included.
TEST(JsonReader, NumbersReadAsFromChars) {
  std::vector<std::string> texts = {"0",
                                    "-0",
                                    "0.5",
                                    "-0.0",
                                    "123456789012345",
                                    "1234567890123456",
                                    "0.000000000000001",
                                    "9007199254740993",
                                    "1e2",
                                    "-2.5E-3",
                                    "1445.16"};
  std::uint64_t x = 88172645463325252ULL;  // xorshift64
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const std::string digits = std::to_string(x % 1000000000000000000ULL);
    const std::size_t point = x % (digits.size() + 1);
    const std::string text = (x & 1 ? "-" : "") + digits.substr(0, point == 0 ? 1 : point) +
                             (point == 0 || point >= digits.size() ? "" : "." + digits.substr(point));
    texts.push_back(text);
  }
  for (const std::string& text : texts) {
    double expected = 0;
    std::from_chars(text.data(), text.data() + text.size(), expected);
    const double read = parse_json(text).number;
    EXPECT_EQ(std::memcmp(&read, &expected, sizeof read), 0) << text;  // -0 stays -0
  }
}

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "f.json");
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonReader, MalformedInputNamesLineAndColumn) {
  EXPECT_NE(error_of("{\"a\": 1,\n \"b\" 2}").find("f.json:2:6: expected ':'"), std::string::npos)
      << error_of("{\"a\": 1,\n \"b\" 2}");
  for (const char* bad : {"",      "[1,]",  "{\"a\":1,}",  "01",       "1.",      "1e",        "-",
                          "nul",   "[1 2]", "{\"a\":1} x", "\"a\nb\"", "\"\\x\"", "\"\\u12\"", "{\"a\":1,\"a\":2}",
                          "{1:2}", "[",     "\"open",      "NaN",      "1e999",   "// c\n1",   "{'a':1}"}) {
    EXPECT_NE(error_of(bad).find("f.json:"), std::string::npos) << bad << ": " << error_of(bad);
  }
  EXPECT_NE(error_of(std::string(300, '[')).find("nested"), std::string::npos);
  EXPECT_NE(error_of("{\"a\":1,\"a\":2}").find("duplicate \"a\""), std::string::npos);
}

// The error the readers give for `expected` at byte `offset` of `text`: line and column counted
// here from the text, the byte there (or the end of the input) quoted.
std::string expected_error(const std::string& text, std::size_t offset, const std::string& expected) {
  const std::string found = offset < text.size() ? "'" + std::string(1, text[offset]) + "'" : "the end of the input";
  return testing::text_position("f.json", text, offset) + ": expected " + expected + ", found " + found;
}

struct BadCase {
  std::string text;
  std::size_t offset;  // of the byte the error is about
  std::string expected;
};

// Each kind of malformed text, with the byte its error names and what was expected there.
TEST(JsonReader, EachErrorNamesItsByte) {
  const std::string missing_comma = "{\"a\": 1\n  \"b\": 2}";
  const std::string missing_array_comma = "[1,\n  2 3]";
  const std::string duplicate = "{\"a\": 1,\n  \"b\": {\"a\": 2}, \"a\": 3}";
  const std::string escaped_duplicate = "[{\"q\\\"\\\\\": 1, \"q\\\"\\\\\": 2}]";  // the key q"\ twice
  const std::string nested_duplicate = "[[{\"x\": [{}, {\"k\": 1, \"k\": 2}]}]]";
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  const std::string deep_objects = [] {
    std::string text;
    for (int i = 0; i <= kMaxJsonDepth; ++i) text += "{\"a\":";
    return text + "1" + std::string(kMaxJsonDepth + 1, '}');
  }();
  const std::vector<BadCase> cases = {
      {missing_comma, missing_comma.find("\"b\""), "',' or '}'"},
      {missing_array_comma, missing_array_comma.find('3'), "',' or ']'"},
      {"{\"a\" 1}", 5, "':'"},
      {"{1: 2}", 1, "a string key"},
      {duplicate, duplicate.rfind("\"a\""), "a key other than the duplicate \"a\""},
      {escaped_duplicate, escaped_duplicate.rfind("\"q"), "a key other than the duplicate \"q\"\\\""},
      {nested_duplicate, nested_duplicate.rfind("\"k\""), "a key other than the duplicate \"k\""},
      {deep, kMaxJsonDepth, "at most 256 nested arrays and objects"},
      {deep_objects, deep_objects.find('{', 5 * kMaxJsonDepth), "at most 256 nested arrays and objects"},
      {"1e400", 0, "a number within the range of a double"},
      {"[1, -1e400]", 4, "a number within the range of a double"},
      {"[0.5,\n 1e-400]", 7, "a number within the range of a double"},  // underflows to 0
      {"[1" + std::string(400, '0') + "]", 1, "a number within the range of a double"},
      {"01", 1, "the end of the document"},
      {"[-01]", 3, "',' or ']'"},
      {"1.", 2, "a digit after '.'"},
      {"1.e5", 2, "a digit after '.'"},
      {"1e+", 3, "a digit in the exponent"},
      {"-", 1, "a JSON value"},
      {"[1,]", 3, "a JSON value"},
      {"{\"a\": 1,}", 8, "a string key"},
      {"[tru]", 1, "a JSON value"},
      {"{\"a\": nul}", 6, "a JSON value"},
      {"NaN", 0, "a JSON value"},
      {"// c\n1", 0, "a JSON value"},
      {"", 0, "a JSON value"},
      {" \n ", 3, "a JSON value"},
      {"[", 1, "a JSON value"},
      {"\"a\tb\"", 2, "an escaped control character"},
      {std::string("[\"a\0b\"]", 7), 3, "an escaped control character"},
      {"\"open", 5, "'\"' closing the string"},
      {"\"a\\x\"", 3, "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX"},
      {"\"a\\", 3, "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX"},
      {"\"\\u12g4\"", 5, "four hex digits after \\u"},
      {"\"\\u12", 5, "four hex digits after \\u"},
      {"\"\\ud83d\"", 7, "a low surrogate after a high one"},          // a lone high surrogate
      {"\"\\ud83d\\u0041\"", 13, "a low surrogate after a high one"},  // not followed by a low one
      {"\"\\ud83d\\udz00\"", 10, "four hex digits after \\u"},
      {"{\"a\": 1} x", 9, "the end of the document"},
      {"[1]]", 3, "the end of the document"},
      {std::string("1 \0", 3), 2, "the end of the document"},  // a '\0' is not the end of the text
      {std::string("[1,\0]", 5), 3, "a JSON value"},
  };
  for (const BadCase& c : cases) {
    // what() is a C string: a '\0' found ends it.
    EXPECT_EQ(error_of(c.text), expected_error(c.text, c.offset, c.expected).c_str()) << c.text.substr(0, 80);
  }
}

// The bound is on arrays and objects nested: 256 are read, the 257th is the error above.
TEST(JsonReader, ReadsTheDeepestNestingAllowed) {
  JsonValue v = parse_json(std::string(kMaxJsonDepth, '[') + "1" + std::string(kMaxJsonDepth, ']'));
  int depth = 0;
  for (const JsonValue* p = &v; p->kind == Kind::kArray; p = &p->items.front()) ++depth;
  EXPECT_EQ(depth, kMaxJsonDepth);
  std::string objects;
  for (int i = 0; i < kMaxJsonDepth; ++i) objects += "{\"a\":";
  v = parse_json(objects + "null" + std::string(kMaxJsonDepth, '}'));
  depth = 0;
  for (const JsonValue* p = &v; p->kind == Kind::kObject; p = p->find("a")) ++depth;
  EXPECT_EQ(depth, kMaxJsonDepth);
}

// Strings are bytes: other bytes pass through unchecked (not validated as UTF-8), escapes become
// UTF-8, a surrogate pair one code point, a lone low surrogate its own three bytes.
TEST(JsonReader, StringsAreByteStrings) {
  EXPECT_EQ(parse_json("\"\xff\xc3\xa9\x7f\"").text, "\xff\xc3\xa9\x7f");
  EXPECT_EQ(parse_json(R"("\u0041\u00e9\u20ac\uD83D\uDE00\u0000")").text,
            std::string("A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0", 11));
  EXPECT_EQ(parse_json(R"("\udc00")").text, "\xed\xb0\x80");
  EXPECT_EQ(parse_json(R"("\"\\\/\b\f\n\r\t")").text, "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parse_json(R"({"a\u0062": 1})").find("ab")->number, 1);
}

// Numbers at the edges of a double: the largest and the smallest subnormal are read, and integers
// past 2^64 round as from_chars rounds them.
TEST(JsonReader, ReadsNumbersAtTheEdgesOfADouble) {
  EXPECT_EQ(parse_json("1.7976931348623157e308").number, 1.7976931348623157e308);
  EXPECT_EQ(parse_json("-4.9406564584124654e-324").number, -4.9406564584124654e-324);
  EXPECT_EQ(parse_json("18446744073709551617").number, 18446744073709551616.0);
  EXPECT_EQ(parse_json("-9223372036854775809").number, -9223372036854775808.0);
  EXPECT_EQ(parse_json("0.0e-999999999999").number, 0);
}

}  // namespace
}  // namespace megasim::scenarios
