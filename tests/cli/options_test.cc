// The command line's shared options and outputs (issue 25): --gpus on every command that simulates
// one cluster size, an explicit --trace-ranks list written whole, the key table as JSON, report.json's
// provenance, and counts in the right grammatical number.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"

namespace {

using megasim::cli_testing::contents;
using megasim::cli_testing::Result;
using megasim::cli_testing::run;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// TP 2 x PP 2 with 4 layers: DP is whatever the cluster size leaves.
const char* const kPlan =
    "--set plan.tensor_model_parallel_size=2 --set plan.pipeline_model_parallel_size=2 --set model.num_layers=4 "
    "--set plan.num_layers_per_virtual_pipeline_stage=0 --set plan.global_batch_size=32";

const std::string kCampaign = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";

// --gpus N is --set cluster.gpus=N, to the byte, for run and campaign as for plan and topo.
TEST(CliOptions, GpusIsTheClusterSizeOnEveryCommand) {
  for (const std::string command : {"run", "plan", "topo"}) {
    const Result shorthand = run(command + " " + kPlan + " --gpus 16 --json");
    ASSERT_EQ(shorthand.exit_code, 0) << shorthand.output;
    EXPECT_EQ(shorthand.output, run(command + " " + kPlan + " --set cluster.gpus=16 --json").output) << command;
    EXPECT_NE(shorthand.output, run(command + " " + kPlan + " --set cluster.gpus=8 --json").output) << command;
  }
  EXPECT_NE(run(std::string("run ") + kPlan + " --gpus 16 --json").output.find("\"world_size\": 16"),
            std::string::npos);
  const std::string campaign = "campaign " + kCampaign + " --days 1 --seeds 1 --json";
  const Result shorthand = run(campaign + " --gpus 32");
  ASSERT_EQ(shorthand.exit_code, 0) << shorthand.output;
  EXPECT_EQ(shorthand.output, run(campaign + " --set cluster.gpus=32").output);
  EXPECT_NE(shorthand.output, run(campaign).output);  // the file's 64 GPUs
  // Out of range: refused at the parser with cluster.gpus's range (1 to 2^24 - 2, NIC addresses).
  const Result bad = run(std::string("run ") + kPlan + " --gpus 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--gpus: 0: want a base-10 integer from 1 to 16777214"), std::string::npos) << bad.output;
}

// An explicit list is written as asked, beyond the default limit of 16 ranks.
TEST(CliOptions, ExplicitTraceRanksAreAllWritten) {
  const auto dir = std::filesystem::temp_directory_path() / "megasim_cli_test_trace_ranks";
  std::filesystem::remove_all(dir);
  std::string list;
  for (int r = 31; r >= 12; --r) list += (list.empty() ? "" : ",") + std::to_string(r);  // 20 ranks
  const Result r = run(std::string("run ") + kPlan + " --gpus 32 --out " + dir.string() + " --trace-ranks " + list);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string trace = contents(dir / "trace.json");
  EXPECT_EQ(count(trace, "\"name\":\"process_name\""), 20u);
  for (int rank = 0; rank < 32; ++rank) {
    const bool listed = rank >= 12;
    EXPECT_EQ(trace.find("\"args\":{\"name\":\"rank " + std::to_string(rank) + " (") != std::string::npos, listed)
        << rank;
  }
  std::filesystem::remove_all(dir);
}

// keys --json holds the rows of the text table, one object per key, with typed defaults.
TEST(CliOptions, KeysAsJson) {
  const Result json = run("keys --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const Result text = run("keys");
  ASSERT_EQ(text.exit_code, 0);
  std::size_t rows = 0;  // the text table's key rows: "  name  type  default ..."
  for (std::size_t at = text.output.find("\n  "); at != std::string::npos; at = text.output.find("\n  ", at + 1)) {
    ++rows;
  }
  EXPECT_GT(rows, 50u);
  EXPECT_EQ(count(json.output, "\"key\": "), rows);
  EXPECT_EQ(json.output.rfind("{\n  \"keys\": [", 0), 0u) << json.output.substr(0, 80);
  for (const char* field : {R"("key": "cluster.gpus")", R"("section": "cluster")", R"("name": "gpus")",
                            R"("type": "integer")", R"("default": 12288)", R"("key": "plan.sequence_parallel")",
                            R"("type": "boolean")", R"("default": true)", R"("choices": "ecmp|)"}) {
    EXPECT_NE(json.output.find(field), std::string::npos) << field;
  }
}

// report.json says where it came from: the scenario file and name, the seed, the backend, the
// calibration file and the binary; the same inputs give the same bytes.
TEST(CliOptions, ReportJsonCarriesItsProvenance) {
  const std::string file = std::string(MEGASIM_SOURCE_DIR) + "/scenarios/megatron/korthikanti_22b.toml";
  const Result r = run("run " + file + " --seed 7 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t at = r.output.find("\"provenance\": {");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string provenance = r.output.substr(at);
  // The file's [calibration] file, found next to it.
  const std::string calibration = std::string(MEGASIM_SOURCE_DIR) + "/scenarios/calibration/a100_public.toml";
  for (const std::string& field :
       {"\"scenario_file\": \"" + file + "\"", std::string("\"scenario_name\": \"korthikanti_22b\""),
        std::string("\"seed\": 7,"), std::string("\"backend\": \"sim\""),
        "\"calibration_file\": \"" + calibration + "\"", std::string("\"megasim_version\": \"0.1.0\""),
        std::string("\"megasim_commit\": \"")}) {
    EXPECT_NE(provenance.find(field), std::string::npos) << field << "\n" << provenance;
  }
  EXPECT_EQ(provenance.find("\"megasim_commit\": \"\""), std::string::npos);
  EXPECT_EQ(r.output, run("run " + file + " --seed 7 --json").output);
  // The built-in defaults: read from no file, and the public calibration defaults.
  const Result defaults = run(std::string("run ") + kPlan + " --gpus 8 --json");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.output;
  EXPECT_NE(defaults.output.find("\"scenario_file\": null"), std::string::npos) << defaults.output;
  EXPECT_NE(defaults.output.find("\"calibration_file\": null"), std::string::npos) << defaults.output;
  const Result version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.output.rfind("megasim 0.1.0 (commit ", 0), 0u) << version.output;
}

// Counts in the text outputs agree with their nouns.
TEST(CliOptions, CountsAreInTheRightGrammaticalNumber) {
  const Result one = run("topo --gpus 8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("8 GPUs in 1 server, 1 rail-ToR group, 1 pod\n"), std::string::npos) << one.output;
  const Result plan =
      run("plan --gpus 8 --set plan.tensor_model_parallel_size=8 --set "
          "plan.pipeline_model_parallel_size=1 --set plan.num_layers_per_virtual_pipeline_stage=0 "
          "--set plan.global_batch_size=1 --set model.num_layers=1");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("; 1 micro-batch of 1 per iteration, 1 layer per stage\n"), std::string::npos)
      << plan.output;
  for (const Result* r : {&one, &plan}) {
    for (const char* wrong : {" 1 pods", " 1 servers", " 1 groups", " 1 micro-batches", " 1 layers", "(s)"}) {
      EXPECT_EQ(r->output.find(wrong), std::string::npos) << wrong << "\n" << r->output;
    }
  }
}

}  // namespace
