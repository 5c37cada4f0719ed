// The strict JSON reader: every kind of value, escapes, what json_writer.h writes reads back, and
// each kind of malformed input is an error naming its line and column.
#include "scenarios/json_reader.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scenarios/json_writer.h"
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

}  // namespace
}  // namespace megasim::scenarios
