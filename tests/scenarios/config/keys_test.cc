#include "scenarios/config/keys.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "scenarios/config/loader.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

TEST(KeyTable, EveryKeyIsDocumentedAndUnique) {
  std::set<std::string> names;
  for (const KeySpec& k : key_table()) {
    EXPECT_FALSE(k.description.empty()) << k.full_name();
    EXPECT_TRUE(names.insert(k.full_name()).second) << "duplicate " << k.full_name();
    EXPECT_TRUE(k.set && k.get) << k.full_name();
  }
  EXPECT_GE(names.size(), 30u);
}

// Writing each key's default back through --set must leave the scenario unchanged: the getter,
// the text form and the setter agree for every key.
TEST(KeyTable, DefaultsRoundTripThroughOverrides) {
  const Scenario defaults;
  for (const KeySpec& k : key_table()) {
    Scenario s;
    std::string text = format_value(k.get(defaults));
    apply_override(s, k.full_name() + "=" + text);
    EXPECT_EQ(format_value(k.get(s)), text) << k.full_name();
  }
}

bool numeric(const KeySpec& k) {
  return k.type == ValueType::kInt || k.type == ValueType::kFloat;
}

// Every number of the table has a physical range, and the defaults (public figures) lie inside it.
TEST(KeyRanges, EveryNumericKeyHasARangeHoldingItsDefault) {
  const Scenario defaults;
  for (const KeySpec& k : key_table()) {
    if (!numeric(k)) continue;
    EXPECT_LT(k.range.min, k.range.max) << k.full_name();
    EXPECT_TRUE(k.range.contains(k.get(defaults))) << k.full_name() << " = " << format_value(k.get(defaults));
  }
}

// Values outside every range, set the three ways a value arrives (TOML, --set, a Python-like
// Value), are refused with the key, the value and the range in the message, and leave the
// scenario as it was.
TEST(KeyRanges, ValuesOutsideThePhysicalRangeAreRefusedNamingKeyValueAndRange) {
  const Scenario defaults;
  for (const KeySpec& k : key_table()) {
    if (!numeric(k)) continue;
    std::vector<Value> bad{Value(std::int64_t{-1})};  // every range starts at 0 or above
    if (k.type == ValueType::kInt) {
      if (k.range.max < 9e18) bad.emplace_back(static_cast<std::int64_t>(k.range.max) + 1);
    } else {
      bad.insert(bad.end(),
                 {Value(k.range.max * 2 + 1), Value(std::nan("")), Value(HUGE_VAL), Value(-HUGE_VAL), Value(1e300)});
      if (k.range.min > 0) bad.emplace_back(k.range.min / 2);  // 1e-300 and the like
    }
    for (const Value& v : bad) {
      Scenario s;
      try {
        k.set(s, coerce(k, v));
        ADD_FAILURE() << k.full_name() << " accepted " << format_value(v);
      } catch (const sim::ConfigError& e) {
        EXPECT_EQ(e.key(), k.full_name());
        EXPECT_EQ(e.value(), format_value(coerce(k, v)));
        EXPECT_NE(e.valid().find(" from "), std::string::npos) << e.what();
      }
      EXPECT_EQ(format_value(k.get(s)), format_value(k.get(defaults))) << k.full_name();
    }
  }
}

TEST(KeyRanges, BoundsThemselvesAreAccepted) {
  for (const KeySpec& k : key_table()) {
    if (!numeric(k)) continue;
    for (const double b : {k.range.min, k.range.max}) {
      Scenario s;
      const Value v =
          k.type == ValueType::kInt ? Value(b >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(b)) : Value(b);
      EXPECT_NO_THROW(k.set(s, v)) << k.full_name() << " = " << format_value(v);
    }
  }
}

// TOML++ refuses an integer beyond 64 bits while parsing, before the key table sees it: the message
// still names the key. --set parses it itself: refused with the key's range, not clamped.
TEST(KeyRanges, IntegersBeyond64BitsAreRefusedNamingTheKey) {
  try {
    load_scenario_text("[simulation]\nname = \"x\"\n[cluster]\ngpus = 18446744073709551616\n", "s.toml");
    FAIL() << "accepted 2^64";
  } catch (const sim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("s.toml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cluster.gpus"), std::string::npos) << e.what();
  }
  for (const char* text : {"simulation.seed=18446744073709551616", "simulation.seed=9223372036854775808"}) {
    Scenario s;
    try {
      apply_override(s, text);
      FAIL() << "accepted " << text;
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "simulation.seed");
      EXPECT_NE(e.valid().find("9223372036854775807"), std::string::npos) << e.what();
    }
    EXPECT_EQ(s.seed, Scenario().seed);
  }
}

TEST(KeyTable, DescribeListsEverySection) {
  const std::string text = describe_keys();
  for (const char* section : {"[simulation]", "[cluster]", "[fabric]", "[collective]", "[model]", "[plan]"}) {
    EXPECT_NE(text.find(section), std::string::npos) << section;
  }
  EXPECT_NE(text.find("tor_oversubscription"), std::string::npos);
}

TEST(KeyTable, UnknownKeyNamesSectionAndValidKeys) {
  try {
    find_key("cluster", "gpu_count");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpu_count");
    EXPECT_NE(e.valid().find("gpus_per_server"), std::string::npos);
  }
  EXPECT_THROW(find_key("clutser", "gpus"), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::scenarios
