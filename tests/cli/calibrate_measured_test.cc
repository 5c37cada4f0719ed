// `megasim calibrate --measured` end to end: rows "measured" with `megasim run` under a known
// calibration, fitted from the defaults; the written file, loaded by `megasim run`, predicts them.
// The refusals of bad input are in hostile/measured_calibration_cases.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using megasim::cli_testing::contents;
using megasim::cli_testing::Result;
using megasim::cli_testing::run;
using megasim::cli_testing::write_text;

const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";

// The first number after "key": in a JSON text (the report's own digits).
std::string json_number(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return "(no " + key + ")";
  const std::size_t start = at + key.size() + 4;
  return json.substr(start, json.find_first_of(",\n}", start) - start);
}

std::string iteration_time(const std::string& args) {
  const Result r = run("run " + kSmall + " --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json_number(r.output, "iteration_time_s");
}

class CalibrateMeasured : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_);
    write_text(dir_ / "truth.toml", "[compute]\nbest_gemm_efficiency = 0.6\n");
    const std::string truth = " --set calibration.file=" + (dir_ / "truth.toml").string();
    write_text(dir_ / "m.csv",
               "# synthetic: megasim run under truth.toml\nname,plan.global_batch_size,iteration_time_s\n"
               "b64,64," +
                   iteration_time(truth) + "\nb128,128," + iteration_time("--set plan.global_batch_size=128" + truth) +
                   "\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One folder per test and process: ctest runs the tests of this file concurrently.
  const fs::path dir_ =
      fs::temp_directory_path() /
      ("megasim_cli_calibrate_measured_" +
       std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" + std::to_string(::getpid()));
};

TEST_F(CalibrateMeasured, WritesAFileThatPredictsTheRows) {
  const fs::path out = dir_ / "fitted.toml";
  const std::string args = "calibrate " + kSmall + " --measured " + (dir_ / "m.csv").string() +
                           " --fit best_gemm_efficiency --json --out " + out.string();
  const Result r =
      megasim::cli_testing::run_shell("env SOURCE_DATE_EPOCH=0 " + std::string(MEGASIM_BINARY) + " " + args + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : {"\"parameters\"", "\"rows\"", "\"error_after\"", "\"leave_one_out_mean_abs_error\"",
                          "\"status\": \"fitted\""}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key << "\n" << r.output;
  }
  const std::string file = contents(out);
  EXPECT_NEAR(std::stod(json_number(r.output, "fitted")), 0.6, 1e-3) << r.output;
  EXPECT_NE(file.find("best_gemm_efficiency = "), std::string::npos) << file;
  EXPECT_NE(file.find("1970-01-01T00:00:00Z"), std::string::npos) << file;
  EXPECT_NE(file.find("b64, b128"), std::string::npos) << file;
  // `megasim run` with the fitted file predicts what the report says it does.
  const std::string after = json_number(r.output, "after");
  EXPECT_EQ(iteration_time("--set calibration.file=" + out.string()), after);
}

TEST_F(CalibrateMeasured, TheTextReportListsParametersAndRows) {
  const Result r =
      run("calibrate " + kSmall + " --measured " + (dir_ / "m.csv").string() + " --fit best_gemm_efficiency");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"best_gemm_efficiency", "b64", "b128", "leave-one-out mean |error|"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
}

TEST(CalibrateMeasuredHelp, DescribesTheCsvAndTheParameters) {
  const Result r = run("calibrate --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"--measured", "iteration_time_s", "network_efficiency", "launch_overhead_us"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
}

}  // namespace
