// The CSV of measured runs (scenarios/studies/calibrate/measured_rows.h): its columns, and an error
// for each kind of bad input naming the file, the line and the column.
#include "scenarios/studies/calibrate/measured_rows.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

MeasuredTable parse(const std::string& text) {
  return parse_measured_csv(text, "m.csv", "runs");
}

// The message of the ConfigError parsing `text` throws; "(no error)" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MeasuredRows, ReadsNamesScenariosOverridesAndTheTarget) {
  const MeasuredTable t = parse(
      "# measured on our cluster\n"
      "name,scenario,cluster.gpus,plan.global_batch_size,iteration_time_s\r\n"
      "small,a.toml,32,512,2.5\r\n"
      "\n"
      ",,64,,\"3.25\"\n");
  EXPECT_EQ(t.target, MeasuredTarget::kIterationTime);
  ASSERT_EQ(t.rows.size(), 2U);
  EXPECT_EQ(t.keys, (std::vector<std::string>{"cluster.gpus", "plan.global_batch_size"}));
  EXPECT_EQ(t.rows[0].name, "small");
  EXPECT_EQ(t.rows[0].line, 3U);
  EXPECT_EQ(t.rows[0].scenario_file, "runs/a.toml");
  EXPECT_EQ(t.rows[0].overrides, (std::vector<std::string>{"cluster.gpus=32", "plan.global_batch_size=512"}));
  EXPECT_DOUBLE_EQ(t.rows[0].measured, 2.5);
  // Empty cells: the default name, the base scenario, the key as the scenario has it.
  EXPECT_EQ(t.rows[1].name, "row 2");
  EXPECT_EQ(t.rows[1].line, 5U);
  EXPECT_EQ(t.rows[1].scenario_file, "");
  EXPECT_EQ(t.rows[1].overrides, (std::vector<std::string>{"cluster.gpus=64"}));
  EXPECT_DOUBLE_EQ(t.rows[1].measured, 3.25);
}

TEST(MeasuredRows, QuotedFieldsHoldCommasAndQuotes) {
  const MeasuredTable t = parse("name,simulation.name,mfu\n\"a, \"\"b\"\"\",\"x,y\",0.5\n");
  EXPECT_EQ(t.target, MeasuredTarget::kMfu);
  EXPECT_EQ(t.rows[0].name, "a, \"b\"");
  EXPECT_EQ(t.rows[0].overrides, (std::vector<std::string>{"simulation.name=x,y"}));
}

TEST(MeasuredRows, EveryKindOfBadInputNamesWhereAndWhat) {
  const struct {
    const char* text;
    const char* mentions;
  } cases[] = {
      {"", "no header"},
      {"# only a comment\n", "no header"},
      {"cluster.gpus,iteration_time_s\n", "no rows"},
      {"cluster.gpus,iteration_time_s,cluster.gpus\n8,1\n", "m.csv:1: column 3"},
      {"cluster.gpuz,iteration_time_s\n8,1\n", "m.csv:1: column 1"},
      {"cluster.gpuz,iteration_time_s\n8,1\n", "gpuz"},
      {"gpus,iteration_time_s\n8,1\n", "section.key"},
      {"cluster.gpus\n8\n", "exactly one target column"},
      {"iteration_time_s,mfu\n1,0.5\n", "exactly one target column"},
      {"cluster.gpus,iteration_time_s\n8,fast\n", "m.csv:2: iteration_time_s"},
      {"cluster.gpus,iteration_time_s\n8,\n", "a number"},
      {"cluster.gpus,iteration_time_s\n8,-1\n", "seconds > 0"},
      {"cluster.gpus,mfu\n8,45\n", "not percent"},
      {"cluster.gpus,mfu\n8,0\n", "(0, 1]"},
      {"cluster.gpus,iteration_time_s\n8,1,2\n", "2 fields, one per header column"},
      {"name,iteration_time_s\n\"open,1\n", "not closed"},
      {",iteration_time_s\n8,1\n", "a column name"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.mentions), std::string::npos) << c.text << "\n" << message;
  }
}

TEST(MeasuredRows, ABadOverrideValueNamesTheRow) {
  const MeasuredTable t = parse("name,cluster.gpus,iteration_time_s\nbig,many,1\n");
  try {
    row_scenario(t, t.rows[0], Scenario{});
    ADD_FAILURE() << "no error";
  } catch (const sim::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("m.csv:2 (big)"), std::string::npos) << message;
    EXPECT_NE(message.find("cluster.gpus"), std::string::npos) << message;
  }
}

TEST(MeasuredRows, TheFileIsCheckedAsEveryInputFile) {
  try {
    read_measured_csv("/nonexistent/m.csv", "--measured");
    ADD_FAILURE() << "no error";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--measured");
  }
}

}  // namespace
}  // namespace megasim::scenarios
