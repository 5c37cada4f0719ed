#include "scenarios/config/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace megasim::scenarios {
namespace {

TEST(JsonWriter, NestedCompactDocument) {
  JsonWriter w(0);
  w.begin_object().field("a", 1).field("b", 0.5).key("c").begin_array().value(true).null().value("x").end_array();
  w.key("d").begin_object().end_object().end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":0.5,"c":[true,null,"x"],"d":{}})");
}

TEST(JsonWriter, EscapesAndNonFinite) {
  JsonWriter w(0);
  w.begin_array().value("q\"b\\n\n\x01").value(std::numeric_limits<double>::infinity()).value(std::nan("")).end_array();
  EXPECT_EQ(w.str(), "[\"q\\\"b\\\\n\\n\\u0001\",null,null]");
}

TEST(JsonWriter, DoublesRoundTrip) {
  JsonWriter w(0);
  const double x = 0.1 + 0.2;
  w.value(x);
  EXPECT_EQ(std::stod(w.str()), x);
}

}  // namespace
}  // namespace megasim::scenarios
