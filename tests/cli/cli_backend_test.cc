// End-to-end tests of the backends through the megasim executable: calibrate, validate and run on
// the cpu backend (real MPI jobs megasim starts itself), their bad inputs, and run --samples.
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
  const bool cuda_built = megasim::cli_testing::cuda_backend_built();
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
      {args[8].c_str(), megasim::cli_testing::cuda_backend_built() ? "--calibration" : "--backend"},
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

}  // namespace
