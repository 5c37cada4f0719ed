// End-to-end tests of the megasim executable: exit codes, the JSON contract, and that bad input
// gives exit code 2, a message naming the key, and no output files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <span>
#include <string>

#include "cli_test_util.h"

namespace {

using megasim::cli_testing::Result;
using megasim::cli_testing::run;

std::string scenario(const std::string& name) {
  return std::string(MEGASIM_SOURCE_DIR) + "/scenarios/" + name;
}

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

struct BadInput {
  const char* args;
  const char* must_mention;
};

// Each case exits with code 2 and a message that names the key.
void expect_refused(std::span<const BadInput> cases) {
  for (const BadInput& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.must_mention), std::string::npos) << c.args << "\n" << r.output;
  }
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

// Whether or not the CUDA backend is built and a GPU is present, these are refused before anything
// is measured.
TEST(Cli, CalibrateBadInputs) {
  const std::string tiny_on_1024 = "calibrate --backend cpu " + scenario("validate/tiny_gpt_dp2.toml") +
                                   " --set cluster.gpus=1024 --set plan.global_batch_size=1024";
  const std::string too_big = "calibrate --backend cpu " + scenario("validate/tiny_gpt_dp2.toml") +
                              " --set model.hidden_size=16384 --set model.num_attention_heads=128";
  const BadInput cases[] = {
      {"calibrate --backend cpu", "cluster.gpus"},  // the default plan's 1,024 ranks on one machine
      {too_big.c_str(), "this machine's memory"},
      {tiny_on_1024.c_str(), "cluster.gpus"},  // a small model, but 1,024 ranks on one machine
      {"calibrate --backend sim", "--backend"},
      {"calibrate --repetitions 0", "--repetitions"},
      {"calibrate --out /nonexistent-folder/h200.toml", "--out"},
  };
  expect_refused(cases);
}

// --gpus and --nccl-max-bytes are checked before any GPU is touched or process started; more GPU
// processes than this machine has GPUs are refused naming --gpus (a cuda build; without one, the
// backend is what is refused).
TEST(Cli, CalibrateGpusBadInputs) {
  const std::string backends = run("backends --json").output;
  const std::string cuda = backends.substr(backends.find(R"("name": "cuda")"));
  const bool cuda_built = cuda.substr(0, cuda.find('}')).find(R"("built": true)") != std::string::npos;
  const BadInput cases[] = {
      {"calibrate --backend cuda --gpus 0", "--gpus"},
      {"calibrate --backend cuda --gpus -2", "--gpus"},
      {"calibrate --backend cpu --gpus 2", "--gpus"},  // the cpu job has the plan's ranks
      {"calibrate --backend cuda --gpus 2 --nccl-max-bytes 12XB", "--nccl-max-bytes"},
      {"calibrate --backend cuda --gpus 100000", cuda_built ? "--gpus" : "--backend"},
      {"calibrate --backend cuda --gpus 2 --nccl-max-bytes 1KiB", cuda_built ? "--nccl-max-bytes" : "--backend"},
  };
  expect_refused(cases);
}

// Refused before any process is started or anything measured.
TEST(Cli, ValidateBadInputs) {
  const std::string tiny = scenario("validate/tiny_gpt_pp2.toml");
  const std::string args[] = {
      "validate " + tiny + " --backend cuda", "validate " + tiny + " --backend sim",
      "validate " + tiny + " --calibration file",  // "calibrated" without a calibration file
      "validate " + tiny + " --iterations 0", "validate " + tiny + " --warmup -1",
      "validate --set cluster.gpus=1024",  // a plan predicted for A100s, not for this machine
      "validate " + tiny + " --timeout -1", "validate " + tiny + " --calibration sideways",
      "validate " + tiny + " --backend cuda --calibration interleaved",  // cuda has only the file
      // Interleaved (the default) measures its own calibration: a file as well would be ignored.
      "validate " + tiny + " --set calibration.file=" + scenario("calibration/cpu_amd_epyc_tiny_gpt_dp2.toml"),
      "validate " + tiny + " --bound 0", "validate " + tiny + " --bound -5",
      "validate " + tiny + " --set model.hidden_size=16384 --set model.num_attention_heads=128",  // too large here
  };
  const BadInput cases[] = {
      {args[0].c_str(), "--backend"},
      {args[1].c_str(), "--backend"},
      {args[2].c_str(), "cluster.gpu"},
      {args[3].c_str(), "--iterations"},
      {args[4].c_str(), "--warmup"},
      {args[5].c_str(), "cluster.gpu"},
      {args[6].c_str(), "--timeout"},
      {args[7].c_str(), "--calibration"},
      {args[8].c_str(), "--calibration"},
      {args[9].c_str(), "calibration.file"},
      {args[10].c_str(), "--bound"},
      {args[11].c_str(), "--bound"},
      {args[12].c_str(), "this machine's memory"},
  };
  expect_refused(cases);
}

TEST(Cli, RunOnTheCpuBackendBadInputs) {
  const std::string tiny = scenario("validate/tiny_gpt_dp2.toml");
  const std::string args[] = {
      "run " + tiny + " --backend cuda",
      "run " + tiny + " --backend cpu",  // "calibrated" without a calibration file
      "run --backend cpu",               // the default plan names an A100
      "run " + tiny + " --backend cpu --iterations 0 --set calibration.file=" +
          scenario("calibration/cpu_amd_epyc_tiny_gpt_dp2.toml"),
      "run " + tiny +
          " --backend cpu --timeout 0 --set calibration.file=" + scenario("calibration/cpu_amd_epyc_tiny_gpt_dp2.toml"),
  };
  const BadInput cases[] = {
      {args[0].c_str(), "--backend"},    {args[1].c_str(), "cluster.gpu"}, {args[2].c_str(), "cluster.gpu"},
      {args[3].c_str(), "--iterations"}, {args[4].c_str(), "--timeout"},
  };
  expect_refused(cases);
}

// A real run: 2 MPI processes started by megasim itself, reported as the simulator's run is.
// --samples N: the report's samples hold N seeds and figures, the first the plain run's; the text
// report prints the spread; a count out of bounds, or samples of a measured run, are refused.
TEST(Cli, RunSamplesReportsTheSpreadOverSeeds) {
  const std::string args =
      "run " + std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml --set stragglers.jitter_cv=0.02";
  const Result plain = run(args + " --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("\"samples\""), std::string::npos);
  const Result sampled = run(args + " --samples 3 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  for (const char* key : {"\"samples\": {", "\"count\": 3", "\"seeds\": [", "\"iteration_time_s\": {", "\"median\"",
                          "\"p5\"", "\"p95\"", "\"values\": ["}) {
    EXPECT_NE(sampled.output.find(key), std::string::npos) << key;
  }
  const Result text = run(args + " --samples 2");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("over 2 samples"), std::string::npos) << text.output;
  const std::string zero = args + " --samples 0";
  const std::string measured = "run " + scenario("validate/tiny_gpt_dp2.toml") + " --backend cpu --samples 2";
  const BadInput cases[] = {{zero.c_str(), "--samples"}, {measured.c_str(), "--samples"}};
  expect_refused(cases);
}

// explain: the waterfall between a scenario and itself with another batch, in text and JSON; a bad
// key of one side is refused naming it.
TEST(Cli, ExplainPrintsTheWaterfallAndRefusesBadKeys) {
  const std::string small = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";
  const Result text = run("explain " + small + " --b plan.global_batch_size=256");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  for (const char* word : {"compute", "tp_exposed", "pp_exposed", "dp_exposed", "bubble", "waiting", "MFU"}) {
    EXPECT_NE(text.output.find(word), std::string::npos) << word << "\n" << text.output;
  }
  const Result json = run("explain " + small + " " + small + " --a plan.global_batch_size=128 --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"steps\": ["), std::string::npos) << json.output;
  const std::string bad = "explain " + small + " --b plan.no_such_key=1";
  const std::string bad_value = "explain " + small + " --a plan.global_batch_size=0";
  const BadInput cases[] = {{bad.c_str(), "plan.no_such_key"}, {bad_value.c_str(), "plan.global_batch_size"}};
  expect_refused(cases);
}

TEST(Cli, RunOnTheCpuBackendReportsTheMeasuredIteration) {
  const Result r = run("run " + scenario("validate/tiny_gpt_dp2.toml") +
                       " --backend cpu --iterations 1 --json --set plan.global_batch_size=2 --set calibration.file=" +
                       scenario("calibration/cpu_amd_epyc_tiny_gpt_dp2.toml"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"("backend": "cpu")"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(R"("iteration_time_s")"), std::string::npos) << r.output;
}

// A real validation: 2 MPI processes started by megasim itself, the calibration measured in a round
// before the measured iteration, the comparison printed as JSON and written with both sides'
// Perfetto traces and the calibration, which a later validation can use as its file.
TEST(Cli, ValidateOnTheCpuBackendWritesTheComparisonBothTracesAndItsCalibration) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_validate";
  std::filesystem::remove_all(dir);
  const std::string tiny = scenario("validate/tiny_gpt_dp2.toml") + " --set plan.global_batch_size=2";
  const Result r = run("validate " + tiny + " --iterations 1 --warmup 0 --json --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : {"\"predicted_iteration_time_s\"", "\"measured_iteration_time_s\"", "\"error_percent\"",
                          "\"per_op\"", "\"per_rank\"", "\"calibration\": \"interleaved\"", "\"verdict\""}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
  }
  for (const char* file : {"validation.json", "measured_trace.json", "predicted_trace.json", "calibration.toml"}) {
    EXPECT_GT(std::filesystem::file_size(dir / file), 100u) << file;
  }
  const Result again = run("validate " + tiny + " --iterations 1 --warmup 0 --json --calibration file --set " +
                           "calibration.file=" + (dir / "calibration.toml").string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("\"calibration\": \"file\""), std::string::npos) << again.output;
  std::filesystem::remove_all(dir);
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

std::string campaign_small() {
  return std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";
}

TEST(Cli, CampaignJsonHasTheStableKeysAndIsReproducible) {
  const std::string args = "campaign " + campaign_small() + " --days 2 --seeds 3 --json";
  const Result a = run(args);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  for (const char* key :
       {"\"ettr\"", "\"ettr_p5\"", "\"ettr_p95\"", "\"lost_time_s\"", "\"lost_work\"", "\"detection\"", "\"diagnosis\"",
        "\"waiting_for_spares\"", "\"restart\"", "\"checkpoint_save\"", "\"failures\"", "\"gpu\"", "\"switch\"",
        "\"software\"", "\"timeline\"", "\"checkpoint\"", "\"interval_s\"", "\"ettr_per_seed\""}) {
    EXPECT_NE(a.output.find(key), std::string::npos) << key;
  }
  EXPECT_EQ(run(args + " --threads 1").output, a.output);
}

TEST(Cli, CampaignTextAndSweep) {
  const Result r = run("campaign " + campaign_small() + " --days 2 --seeds 2 --sweep-checkpoint-interval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"ETTR", "lost_work", "young", "daly", "best", "timeline"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
}

TEST(Cli, CampaignBadInputs) {
  const std::string small = campaign_small();
  const std::string cases[][2] = {
      {"campaign " + small + " --days 0", "--days"},
      {"campaign " + small + " --seeds 0", "--seeds"},
      {"campaign " + small + " --set failures.gpu_mtbf_h=-1", "failures.gpu_mtbf_h"},
      {"campaign " + small + " --set checkpoint.interval_s=0", "checkpoint.interval_s"},
      {"campaign " + small + " --set recovery.detection=email", "recovery.detection"},
      {"campaign " + small + " --sweep-checkpoint-interval --intervals 100,-1", "--intervals"},
  };
  for (const auto& [args, key] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace

// A small TP 2 x PP 2 x DP 2 plan with jitter, so the what-ifs have something to even out.
const char* const kWhatIfPlan =
    "--set cluster.gpus=8 --set plan.tensor_model_parallel_size=2 --set plan.pipeline_model_parallel_size=2 "
    "--set model.num_layers=4 --set plan.num_layers_per_virtual_pipeline_stage=0 --set plan.global_batch_size=8 "
    "--set stragglers.jitter_cv=0.05";

// run --out writes trace.json with its scenario; whatif reads it back, and its replay of the
// recorded compute is the iteration the run reported.
TEST(Cli, WhatIfAnalysesATraceWrittenByRun) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_whatif";
  std::filesystem::remove_all(dir);
  const Result written = run(std::string("run ") + kWhatIfPlan + " --max-trace-ranks 0 --out " + dir.string());
  ASSERT_EQ(written.exit_code, 0) << written.output;
  const Result text = run("whatif " + (dir / "trace.json").string());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  for (const char* what : {"group_mean_compute", "fix_slowest_ranks", "balanced_last_stage", "(stage 0, replica"}) {
    EXPECT_NE(text.output.find(what), std::string::npos) << what << "\n" << text.output;
  }
  const Result json = run("whatif " + (dir / "trace.json").string() + " --json --slowest 2");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"the 2 slowest ranks at"), std::string::npos) << json.output;
  // The replay of the recorded compute reproduces the simulated iteration: both times print alike.
  const std::size_t at = json.output.find("\"iteration_time_s\": ");
  const std::size_t replay = json.output.find("\"replay_time_s\": ");
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(replay, std::string::npos);
  EXPECT_EQ(json.output.substr(at + 20, 12), json.output.substr(replay + 17, 12)) << json.output;
  std::filesystem::remove_all(dir);
}

TEST(Cli, WhatIfBadInputs) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_whatif_bad";
  std::filesystem::remove_all(dir);
  const Result partial = run(std::string("run ") + kWhatIfPlan + " --max-trace-ranks 2 --out " + dir.string());
  ASSERT_EQ(partial.exit_code, 0) << partial.output;
  const std::string trace = (dir / "trace.json").string();
  const std::string broken = (dir / "broken.json").string();
  {
    std::FILE* f = std::fopen(broken.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"traceEvents\": [\n  1,\n  ]}\n", f);
    std::fclose(f);
  }
  const std::string args[] = {
      "whatif " + trace,
      "whatif " + broken,
      "whatif /nonexistent/trace.json",
      "whatif " + trace + " --slowest -1",
      "whatif " + (dir / "report.json").string(),
  };
  const BadInput cases[] = {
      {args[0].c_str(), "--max-trace-ranks 0"},     {args[1].c_str(), "broken.json:3:3"},
      {args[2].c_str(), "/nonexistent/trace.json"}, {args[3].c_str(), "whatif.slowest"},
      {args[4].c_str(), "no \"megasim\" object"},
  };
  expect_refused(cases);
  std::filesystem::remove_all(dir);
}

// Data from a real run: 2 MPI processes measure the iteration on the cpu backend (one trace unit
// per rank) and whatif analyses the trace they wrote.
TEST(Cli, WhatIfAnalysesATraceMeasuredOnTheCpuBackend) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_whatif_cpu";
  std::filesystem::remove_all(dir);
  const Result measured = run("run " + scenario("validate/tiny_gpt_dp2.toml") +
                              " --backend cpu --iterations 1 --max-trace-ranks 0 --set plan.global_batch_size=2 "
                              "--set calibration.file=" +
                              scenario("calibration/cpu_amd_epyc_tiny_gpt_dp2.toml") + " --out " + dir.string());
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  const Result r = run("whatif " + (dir / "trace.json").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(R"("backend": "cpu")"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(R"("group_mean_compute")"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

// kSweepPlan: a 4-layer GPT on one 8-GPU server, global batch 8: 64 candidate plans, 32 valid
// (tests/scenarios/sweep_study_test.cc derives both). kSweepModel, the same without the cluster
// size, for the sweeps that vary it (a --set of a swept key is refused).
const std::string kSweepModel =
    "--set model.num_layers=4 --set model.hidden_size=1024 --set model.num_attention_heads=16 "
    "--set model.seq_length=1024 --set plan.global_batch_size=8";
const std::string kSweepPlan = "--set cluster.gpus=8 " + kSweepModel;

TEST(Cli, SweepRanksPlansAndWritesEveryCandidateToCsv) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "sweep.csv").string();
  const Result r = run(std::string("sweep ") + kSweepPlan + " --top 5 --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"64 candidate plans: ", "screen: replica 0 stood for every replica", "top 5 of", "tokens/s",
                           "MFU", "bubble", "more plans only screened"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
  const Result full = run(std::string("sweep ") + kSweepPlan + " --top 5 --full");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  for (const char* text : {"64 candidate plans: 32 simulated in full, 0 screened", "top 5 of 32"}) {
    EXPECT_NE(full.output.find(text), std::string::npos) << text << "\n" << full.output;
  }
  // The top 5 are certified: the same rows, to the digit, as when every plan is simulated in full.
  const auto table = [](const std::string& out) {  // the header and rows 1 to 5
    const std::size_t first = out.find("rank ");
    return out.substr(first, out.find('\n', out.find("\n   5 ")) - first);
  };
  EXPECT_EQ(table(r.output), table(full.output)) << r.output;
  std::FILE* f = std::fopen(csv.c_str(), "r");
  ASSERT_NE(f, nullptr);
  int lines = 0;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) lines += c == '\n' ? 1 : 0;
  std::fclose(f);
  EXPECT_EQ(lines, 65);  // header + every candidate
  const Result json = run(std::string("sweep ") + kSweepModel + " --json --threads 1 --gpus 8 16");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  for (const char* key : {"\"varied_keys\"", "\"cluster.gpus\"", "\"counts\"", "\"rows\"", "\"tokens_per_s\"",
                          "\"breakdown\"", "\"reason\""}) {
    EXPECT_NE(json.output.find(key), std::string::npos) << key;
  }
  EXPECT_EQ(run(std::string("sweep ") + kSweepModel + " --json --threads 2 --gpus 8 16").output, json.output);
  std::filesystem::remove_all(dir);
}

TEST(Cli, SweepBadInputs) {
  const std::string plan = kSweepPlan;
  const std::string cases[][2] = {
      {"sweep " + plan + " --vary plan.no_such_key=1,2", "plan.no_such_key"},
      {"sweep " + plan + " --vary plan.micro_batch_size=4..2", "plan.micro_batch_size"},
      {"sweep " + plan + " --vary plan.micro_batch_size=1,x", "\"x\""},
      {"sweep " + plan + " --vary cluster.gpus", "--vary"},
      {"sweep " + kSweepModel + " --gpus 8 --vary cluster.gpus=16", "--vary"},
      {"sweep " + kSweepModel + " --gpus 12", "cluster.gpus"},
      {"sweep " + plan + " --gpus 8 16", "--set = cluster.gpus=8"},
      {"sweep " + plan + " --csv /nonexistent/dir/x.csv", "--csv"},
      {"sweep " + plan + " --confirm-top 0", "--confirm-top"},
  };
  for (const auto& [args, key] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << args << "\n" << r.output;
  }
}
