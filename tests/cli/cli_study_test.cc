// End-to-end tests of the studies through the megasim executable: campaign, explain, whatif and
// sweep, their reports and their bad inputs.
#include <gtest/gtest.h>

#include <cstdio>
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

// A small TP 2 x PP 2 x DP 2 plan with jitter, so the what-ifs have something to even out.
const char* const kWhatIfPlan =
    "--set cluster.gpus=8 --set plan.tensor_model_parallel_size=2 --set plan.pipeline_model_parallel_size=2 "
    "--set model.num_layers=4 --set plan.num_layers_per_virtual_pipeline_stage=0 --set plan.global_batch_size=8 "
    "--set stragglers.jitter_cv=0.05";

// run --out writes trace.json and trace.bin with its scenario; whatif reads either back, and its
// replay of the recorded compute is the iteration the run reported.
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
  // trace.bin holds the same recording: the same analysis from it, from the folder (which stands for
  // its trace.bin), and from a copy under another name (told apart by its magic bytes).
  std::filesystem::copy_file(dir / "trace.bin", dir / "renamed.json");
  for (const std::string& path : {(dir / "trace.bin").string(), dir.string(), (dir / "renamed.json").string()}) {
    const Result binary = run("whatif " + path + " --json --slowest 2");
    ASSERT_EQ(binary.exit_code, 0) << binary.output;
    EXPECT_EQ(binary.output, json.output) << path;
  }
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
      "whatif " + (dir / "trace.bin").string(),
  };
  const BadInput cases[] = {
      {args[0].c_str(), "--max-trace-ranks 0"},     {args[1].c_str(), "broken.json:3:3"},
      {args[2].c_str(), "/nonexistent/trace.json"}, {args[3].c_str(), "whatif.slowest"},
      {args[4].c_str(), "no \"megasim\" object"},   {args[5].c_str(), "--max-trace-ranks 0"},
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
// (tests/scenarios/studies/sweep/sweep_study_test.cc derives both). kSweepModel, the same without
// the cluster size, for the sweeps that vary it (a --set of a swept key is refused).
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

}  // namespace
