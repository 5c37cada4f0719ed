// The shipped H100 calibration (scenarios/calibration/h100_megatron_table.toml) is what `megasim
// calibrate --measured` derives from the public Megatron-LM H100 table
// (scenarios/megatron_h100/README.md): the test reruns the fit and compares every value it writes.
// About 30 s of 3,072- and 6,144-GPU simulations: in build/ only, not under the sanitizers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "cli_test_util.h"

namespace {

// The file's settings: every line but the comment header (which names the commit and the time).
std::string settings_of(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() != '#') out += line + "\n";
  }
  return out;
}

TEST(DerivedCalibration, H100FileIsTheFitOfTheMegatronTable) {
  const std::string source = MEGASIM_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / ("megasim_h100_derivation_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path out = dir / "h100.toml";
  const megasim::cli_testing::Result r = megasim::cli_testing::run(
      "calibrate --measured " + source + "/scenarios/megatron_h100/megatron_h100_fit.csv " + source +
      "/scenarios/megatron_h100/gpt_h100.toml --fit best_gemm_efficiency --no-leave-one-out --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string shipped =
      megasim::cli_testing::contents(source + "/scenarios/calibration/h100_megatron_table.toml");
  EXPECT_EQ(settings_of(megasim::cli_testing::contents(out)), settings_of(shipped));
  EXPECT_NE(settings_of(shipped).find("best_gemm_efficiency = 0.78"), std::string::npos) << shipped;
  std::filesystem::remove_all(dir);
}

}  // namespace
