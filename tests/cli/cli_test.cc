// End-to-end tests of the megasim executable: exit codes, the JSON contract, and that bad input
// gives exit code 2, a message naming the key, and no output files. The backends' runs are in
// cli_backend_test.cc, the studies (campaign, explain, what-if, sweep) in cli_study_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_cases.h"
#include "cli_test_util.h"

namespace {

using megasim::cli_testing::BadInput;
using megasim::cli_testing::expect_refused;
using megasim::cli_testing::Result;
using megasim::cli_testing::run;
using megasim::cli_testing::scenario;

TEST(Cli, CollectiveJsonHasTheStableKeys) {
  const Result r = run("collective --op all_reduce --bytes 64MiB --gpus 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : {"\"op\": \"all_reduce\"", "\"bytes\": 67108864", "\"gpus\": 16", "\"algo\": \"ring\"",
                          "\"routing\": \"ecmp\"", "\"time_s\"", "\"algbw_gbytes_per_s\"", "\"busbw_gbytes_per_s\""}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key << "\n" << r.output;
  }
}

TEST(Cli, SameSeedGivesIdenticalJson) {
  const std::string args = "collective --bytes 16MiB --gpus 64 --json --seed 5";
  const Result a = run(args), b = run(args);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
}

TEST(Cli, TopoPrintsTiersAndBisection) {
  const Result r = run("topo --gpus 4096");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3-tier"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bisection"), std::string::npos) << r.output;
}

TEST(Cli, TopoWritesGraphFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_graph";
  std::filesystem::create_directories(dir);
  const auto json = dir / "g.json", dot = dir / "g.dot";
  const Result r = run("topo --gpus 16 --write-json " + json.string() + " --write-dot " + dot.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(std::filesystem::file_size(json), 100u);
  EXPECT_GT(std::filesystem::file_size(dot), 100u);
  std::filesystem::remove_all(dir);
}

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, ExitsTwoNamesTheKeyAndWritesNothing) {
  // One folder per case: ctest runs the cases in parallel processes.
  const std::string case_name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto dir =
      std::filesystem::temp_directory_path() / ("megasim_cli_test_bad_" + case_name.substr(case_name.find('/') + 1));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto out = dir / "graph.json";
  const Result r = run(std::string(GetParam().args) + " --write-json " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().must_mention), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "output left behind";
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Topo, CliBadInput,
                         ::testing::Values(BadInput{"topo --gpus 12", "cluster.gpus"},
                                           BadInput{"topo --set cluster.switch_radix=63", "cluster.switch_radix"},
                                           BadInput{"topo --set cluster.nic_gbps=-1", "cluster.nic_gbps"},
                                           BadInput{"topo --set fabric.routing=random", "fabric.routing"},
                                           BadInput{"topo --set cluster.tor_oversubscription=0.5",
                                                    "cluster.tor_oversubscription"},
                                           BadInput{"topo --gpus 1000000", "cluster.gpus"},
                                           BadInput{"topo --set nosuch.key=1", "nosuch.key"},
                                           BadInput{"topo /nonexistent.toml", "nonexistent.toml"},
                                           BadInput{"topo --gpus 1024 --write-dot /tmp/x.dot", "topo.graphviz"}),
                         [](const ::testing::TestParamInfo<BadInput>& p) { return "case" + std::to_string(p.index); });

TEST(Cli, CollectiveBadInputs) {
  const BadInput cases[] = {
      {"collective --op allreduce", "--op"},
      {"collective --algo butterfly", "--algo"},
      {"collective --bytes 12XB", "--bytes"},
      {"collective --routing random", "--routing"},
      {"collective --gpus 0", "--gpus"},
      {"collective --group dp --tp 3 --gpus 1536", "plan.tensor_model_parallel_size"},
      {"collective --group dp --tp 8 --pp 7 --gpus 1024", "plan.pipeline_model_parallel_size"},
      {"collective --group xp", "--group"},
      {"collective --set collective.channels=0", "collective.channels"},
  };
  expect_refused(cases);
}

TEST(Cli, BackendsListsTheSimulatorTheCpuBackendAndWhatIsNotBuilt) {
  const Result text = run("backends");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("sim "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("cpu    Eigen float32 kernels + MPI"), std::string::npos) << text.output;
  const Result json = run("backends --json");
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find(R"("name": "sim",)"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find(R"("name": "cuda",)"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find(R"("name": "cpu",)"), std::string::npos) << json.output;
}

TEST(Cli, DefaultScenarioFileLoads) {
  const Result r = run("topo " + scenario("megascale/175b_megatron.toml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"gpus\": 12288"), std::string::npos) << r.output;
}

TEST(Cli, PlanOfTheDefaultScenarioFits) {
  const Result r = run("plan " + scenario("megascale/175b_megatron.toml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"dp\": 192"), std::string::npos) << r.output;  // 12288 / (8 x 8)
  EXPECT_NE(r.output.find("\"fits\": true"), std::string::npos) << r.output;
  const Result bad = run("plan --set plan.tensor_model_parallel_size=3");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("plan.tensor_model_parallel_size"), std::string::npos) << bad.output;
}

TEST(Cli, RunWritesReportAndTrace) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_run";
  std::filesystem::remove_all(dir);
  const Result r = run("run " + scenario("megatron/korthikanti_22b.toml") + " --json --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : {"\"iteration_time_s\"", "\"tokens_per_s\"", "\"mfu\"", "\"hfu\"", "\"flop_convention\"",
                          "\"breakdown\"", "\"memory\"", "\"plan\""}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
  }
  EXPECT_GT(std::filesystem::file_size(dir / "report.json"), 100u);
  EXPECT_GT(std::filesystem::file_size(dir / "trace.json"), 100u);
  EXPECT_GT(std::filesystem::file_size(dir / "trace.bin"), 100u);
  EXPECT_LT(std::filesystem::file_size(dir / "trace.bin"), std::filesystem::file_size(dir / "trace.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "trace.json.partial"));  // streamed, then renamed
  std::filesystem::remove_all(dir);
  // A trace filter naming a rank the plan does not have is refused before anything is written.
  const Result bad_rank =
      run("run " + scenario("megatron/korthikanti_22b.toml") + " --trace-ranks 1000000 --out " + dir.string());
  EXPECT_EQ(bad_rank.exit_code, 2) << bad_rank.output;
  EXPECT_NE(bad_rank.output.find("trace.ranks"), std::string::npos) << bad_rank.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
  // A plan that does not fit is an error, and nothing is written.
  const Result oom =
      run("run --set cluster.gpus=256 --set plan.sequence_parallel=false --set "
          "plan.recompute_granularity=none --set plan.use_distributed_optimizer=false --set "
          "plan.num_layers_per_virtual_pipeline_stage=0 --out " +
          dir.string());
  EXPECT_EQ(oom.exit_code, 2) << oom.output;
  EXPECT_NE(oom.output.find("GB"), std::string::npos) << oom.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(Cli, KeysListsEveryKeyAndHelpExitsZero) {
  const Result keys = run("keys");
  ASSERT_EQ(keys.exit_code, 0);
  EXPECT_NE(keys.output.find("qps_per_connection"), std::string::npos);
  EXPECT_EQ(run("--help").exit_code, 0);
  EXPECT_EQ(run("collective --help").exit_code, 0);
  EXPECT_EQ(run("nosuchcommand").exit_code, 2);
}

}  // namespace
