// MFU under MegaScale's convention next to megasim's (models/flops.h): Jiang et al. (NSDI'24) count
// full s x s attention even when a sliding window removes work, megasim counts the window's band.
// Without a window the two figures are one number; with one, the report's two MFUs of the same
// iteration differ by the ratio of the two FLOP counts, which for this standard GPT follows from
// Korthikanti et al.'s formula 72 B s l h^2 (1 + c s/(6h) + V/(12 l h)), c the attended share of the
// keys: 1 for full attention, 1 - (1 - w/s)^2 for a window of w.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "models/flops.h"
#include "scenarios/config/loader.h"
#include "scenarios/report/iteration_report.h"
#include "scenarios/studies/run_study.h"
#include "tests/scenarios/iteration_test_util.h"

namespace megasim::scenarios {
namespace {

// Eight replicas of the 4-layer GPT of kSmallGptOnOneServer (h 1024, s 1024, vocabulary 64,000, a
// multiple of 128 and so unpadded at TP 1), one micro-batch each.
RunResult small_run(std::int64_t window) {
  return run_iteration_study(load_scenario_text(std::string(testing::kSmallGptOnOneServer) + R"(
[plan]
tensor_model_parallel_size = 1
pipeline_model_parallel_size = 1
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 8
use_flash_attention = true
sliding_window_size = )" + std::to_string(window) +
                                                "\n"));
}

TEST(MfuConvention, WithoutAWindowBothConventionsAreOneNumber) {
  const IterationReport r = small_run(0).report;
  EXPECT_EQ(r.mfu_full_attention, r.mfu);
  EXPECT_GT(r.mfu, 0);
  EXPECT_EQ(r.flop_convention, std::string(models::kFlopConvention));
  EXPECT_EQ(r.full_attention_flop_convention, std::string(models::kFullAttentionFlopConvention));
  EXPECT_NE(r.full_attention_flop_convention.find("megascale2024"), std::string::npos);
  const std::string json = to_json(r);
  EXPECT_NE(json.find("\"mfu_full_attention\""), std::string::npos);
  EXPECT_NE(json.find("\"full_attention_flop_convention\""), std::string::npos);
  EXPECT_EQ(to_text(r).find("full s x s attention"), std::string::npos);  // nothing to add
}

TEST(MfuConvention, WithAWindowFullAttentionIsLargerByTheFlopRatio) {
  const IterationReport r = small_run(256).report;
  const double s = 1024, l = 4, h = 1024, v = 64000;
  const double windowed_share = 1 - 0.75 * 0.75;  // w = s/4: 7/16 of the keys
  const double full = 1 + s / (6 * h) + v / (12 * l * h);
  const double windowed = 1 + windowed_share * s / (6 * h) + v / (12 * l * h);
  EXPECT_NEAR(r.mfu_full_attention / r.mfu, full / windowed, 1e-12);
  // The same ratio in absolute terms: 72 B s l h^2 x bracket FLOPs over T x 8 GPUs x 312 TFLOPS.
  const double b = 8;
  const double denominator = r.iteration_time_s * 8 * 312e12;
  EXPECT_NEAR(r.mfu, 72 * b * s * l * h * h * windowed / denominator, 1e-12);
  EXPECT_NEAR(r.mfu_full_attention, 72 * b * s * l * h * h * full / denominator, 1e-12);
  EXPECT_NE(to_text(r).find("full s x s attention"), std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
