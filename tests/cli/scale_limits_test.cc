// Scale limits: under a data-size limit (ulimit -d) a cluster too large for it is refused before
// anything is simulated, naming cluster.gpus, with exit code 2 and nothing written, while a
// 98,304-GPU iteration and a 30-day campaign at 12,288 GPUs run within the limits stated in
// scenarios/studies/memory_budget.h (an allocation past the limit would fail: exit code 1 or a
// signal).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"

namespace {

using megasim::cli_testing::Result;

Result run_limited(long kib, const std::string& args) {
  return megasim::cli_testing::run_shell("bash -c 'ulimit -d " + std::to_string(kib) + " && exec " + MEGASIM_BINARY +
                                         " " + args + "' 2>&1");
}

// The shipped file's production profile (its slow hosts) runs the straggler what-ifs: four
// simulations at once. The ideal cluster runs one.
const std::string k175b = std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megascale/175b_megascale.toml";
const std::string k175bIdeal = k175b + " --set stragglers.enabled=false";
const std::string k98304 = k175bIdeal + " --set cluster.gpus=98304 --set plan.global_batch_size=12288";

// 98,304 GPUs need about 1.0 GiB by the bound (608 MB measured): refused under 586 MiB. 12,288 GPUs
// (about 0.27 GiB by the bound) run under the same limit.
TEST(ScaleLimits, TooLargeForTheLimitIsRefusedSmallerRuns) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_scale_limits";
  std::filesystem::remove_all(dir);
  const Result refused = run_limited(600'000, "run " + k98304 + " --out " + dir.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("cluster.gpus = 98304"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("GB is available"), std::string::npos) << refused.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
  const Result ran = run_limited(600'000, "run " + k175bIdeal + " --json");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  // With the straggler what-ifs, four simulations at once: 12,288 GPUs no longer fit.
  const Result whatifs = run_limited(600'000, "run " + k175b);
  EXPECT_EQ(whatifs.exit_code, 2) << whatifs.output;
  EXPECT_NE(whatifs.output.find("4 concurrent simulations"), std::string::npos) << whatifs.output;
}

TEST(ScaleLimits, A98304GpuIterationRunsWithinItsStatedMemory) {
  const Result r = run_limited(1'500'000, "run " + k98304 + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"iteration_time_s\""), std::string::npos);
}

TEST(ScaleLimits, AThirtyDayCampaignAt12288GpusRunsWithinItsStatedMemory) {
  const Result r = run_limited(1'500'000, "campaign " + std::string(MEGASIM_SOURCE_DIR) +
                                              "/scenarios/megascale/175b_campaign.toml --days 30 --seeds 10 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"ettr\""), std::string::npos);
}

}  // namespace
