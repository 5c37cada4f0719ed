#include "scenarios/keys.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "scenarios/loader.h"
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
