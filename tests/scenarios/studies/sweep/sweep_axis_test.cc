// `--vary` parsing (scenarios/studies/sweep/sweep_study.h: parse_sweep_axis) and the option checks
// of enumerate_sweep: lists, doubling and stepped ranges, and each kind of bad input naming its
// key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/studies/sweep/sweep_study.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::thrown_key;
using Values = std::vector<std::string>;

TEST(SweepAxis, ListsKeepTheirOrderAndText) {
  const SweepAxis a = parse_sweep_axis("plan.micro_batch_size=4,1,2");
  EXPECT_EQ(a.key, "plan.micro_batch_size");
  EXPECT_EQ(a.values, (Values{"4", "1", "2"}));
  EXPECT_EQ(parse_sweep_axis("fabric.routing=ecmp,spray").values, (Values{"ecmp", "spray"}));
  EXPECT_EQ(parse_sweep_axis("cluster.nic_gbps=100,200.5").values, (Values{"100", "200.5"}));
  // A string may contain "..": it is a value there, not a range.
  EXPECT_EQ(parse_sweep_axis("calibration.file=../a.toml,b.toml").values, (Values{"../a.toml", "b.toml"}));
}

// a..b doubles from a and always ends at b: the issue's own example.
TEST(SweepAxis, DoublingRangeEndsAtItsUpperBound) {
  EXPECT_EQ(parse_sweep_axis("cluster.gpus=1024..12288").values, (Values{"1024", "2048", "4096", "8192", "12288"}));
  EXPECT_EQ(parse_sweep_axis("plan.micro_batch_size=1..8").values, (Values{"1", "2", "4", "8"}));
  EXPECT_EQ(parse_sweep_axis("plan.micro_batch_size=3..3").values, (Values{"3"}));
}

TEST(SweepAxis, SteppedRangeStopsAtOrBeforeItsUpperBound) {
  EXPECT_EQ(parse_sweep_axis("plan.sliding_window_size=0..1024:512").values, (Values{"0", "512", "1024"}));
  EXPECT_EQ(parse_sweep_axis("model.num_layers=1..10:4").values, (Values{"1", "5", "9"}));
}

TEST(SweepAxis, BadInputNamesTheKey) {
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("plan.no_such_key=1,2"); }), "plan.no_such_key");
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("nosection.gpus=1"); }), "nosection.gpus");
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("plan.micro_batch_size"); }), "--vary");
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("gpus=8"); }), "--vary");
  // Bad values, empty items, empty and unbounded ranges, ranges on non-integer keys.
  for (const char* spec : {"plan.micro_batch_size=1,two", "plan.micro_batch_size=1,,2", "plan.micro_batch_size=",
                           "plan.micro_batch_size=8..1", "plan.micro_batch_size=0..8", "plan.micro_batch_size=1..8:0",
                           "plan.micro_batch_size=1..x", "plan.micro_batch_size=1..1000000000:1"}) {
    EXPECT_EQ(thrown_key([spec] { parse_sweep_axis(spec); }), "plan.micro_batch_size") << spec;
  }
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("fabric.routing=ecmp,bogus"); }), "fabric.routing");
  EXPECT_EQ(thrown_key([] { parse_sweep_axis("cluster.nic_gbps=100..400"); }), "cluster.nic_gbps");
}

TEST(SweepAxis, MessagesCarryTheValue) {
  try {
    parse_sweep_axis("plan.micro_batch_size=8..1");
    FAIL() << "no error";
  } catch (const sim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("8..1"), std::string::npos) << e.what();
  }
}

// A value listed twice, as written or as parsed (08 is 8, 1e3 is 1000.0), is refused: sweeping it
// twice doubles a point, merging it hides a typo (1,2,2 for 1,2,4).
TEST(SweepAxis, AValueListedTwiceIsRefused) {
  for (const char* spec : {"plan.micro_batch_size=1,2,2", "plan.micro_batch_size=8,08", "cluster.nic_gbps=1000,1e3",
                           "fabric.routing=ecmp,spray,ecmp", "cluster.gpus=64,128,64"}) {
    try {
      parse_sweep_axis(spec);
      ADD_FAILURE() << "accepted " << spec;
    } catch (const sim::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("is listed twice"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_sweep_axis("plan.micro_batch_size=1,2,4").values, (Values{"1", "2", "4"}));
}

TEST(SweepAxis, AKeyVariedTwiceIsRefused) {
  SweepOptions o;
  o.vary = {parse_sweep_axis("cluster.gpus=8"), parse_sweep_axis("cluster.gpus=16")};
  EXPECT_EQ(thrown_key([&] { enumerate_sweep(Scenario{}, o); }), "--vary");
  o.vary = {};
  o.max_micro_batch_size = -1;
  EXPECT_EQ(thrown_key([&] { enumerate_sweep(Scenario{}, o); }), "--max-micro-batch");
}

// A varied value that breaks the scenario outside its plan is an input error, not a rejected plan.
TEST(SweepAxis, AVariedValueThatBreaksTheScenarioIsAnError) {
  SweepOptions o;
  o.vary = {parse_sweep_axis("cluster.gpus=1024,1001")};  // not a multiple of 8 GPUs per server
  EXPECT_EQ(thrown_key([&] { enumerate_sweep(Scenario{}, o); }), "cluster.gpus");
}

}  // namespace
}  // namespace megasim::scenarios
