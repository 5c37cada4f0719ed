// Calibration to measured runs (scenarios/studies/calibrate/measured_calibration_study.h) on
// synthetic data: the "measured" times are the simulator's own with a calibration file whose
// parameters are set to known values, so a fit from the public defaults must find those values
// again.
#include "scenarios/studies/calibrate/measured_calibration_study.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

// A 4-layer GPT on two servers of 8 A100s, small enough that a fit's hundreds of simulations take
// seconds; the rows vary what sets the balance of GEMM, elementwise, NVLink and network time.
constexpr const char* kScenario = R"([cluster]
gpu = "A100-SXM-80GB"
gpus = 16
[model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
vocab_size = 8192
[plan]
tensor_model_parallel_size = 8
pipeline_model_parallel_size = 1
num_layers_per_virtual_pipeline_stage = 0
sequence_parallel = false
micro_batch_size = 1
global_batch_size = 16
use_distributed_optimizer = false
recompute_granularity = "none"
attention_kernel = "unfused"
)";

// Per row: the overrides (the CSV's key columns).
const std::vector<std::vector<std::string>> kRows = {
    {"model.hidden_size=1024", "model.seq_length=1024", "plan.tensor_model_parallel_size=8"},
    {"model.hidden_size=2048", "model.seq_length=512", "plan.tensor_model_parallel_size=4"},
    {"model.hidden_size=1024", "model.seq_length=2048", "plan.tensor_model_parallel_size=2"},
    {"model.hidden_size=3072", "model.seq_length=1024", "plan.tensor_model_parallel_size=8"},
    {"model.hidden_size=2048", "model.seq_length=2048", "plan.tensor_model_parallel_size=1"},
};

class MeasuredCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("megasim_measured_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
    write("scenario.toml", kScenario);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The simulator's iteration time of row `i` with the calibration file `truth` ("" for the defaults).
  [[nodiscard]] double simulated(std::size_t i, const std::string& truth) const {
    Scenario s = load_scenario_file(path("scenario.toml"));
    apply_overrides(s, kRows[i]);
    if (!truth.empty()) s.calibration_file = path(truth);
    RunOptions o;
    o.straggler_whatifs = false;
    return run_iteration_study(s, o).report.iteration_time_s;
  }

  // measured.csv with the first `rows` rows measured under `truth`.
  void write_measured(const std::string& truth, std::size_t rows, const std::string& name = "measured.csv") const {
    std::string csv = "name,model.hidden_size,model.seq_length,plan.tensor_model_parallel_size,iteration_time_s\n";
    for (std::size_t i = 0; i < rows; ++i) {
      std::string cells;
      for (const std::string& o : kRows[i]) cells += "," + o.substr(o.find('=') + 1);
      std::ostringstream time;
      time << std::setprecision(17) << simulated(i, truth);
      csv += "r" + std::to_string(i) + cells + "," + time.str() + "\n";
    }
    write(name, csv);
  }

  [[nodiscard]] MeasuredCalibrationRequest request(std::vector<std::string> fit) const {
    MeasuredCalibrationRequest r;
    r.csv = path("measured.csv");
    r.base = load_scenario_file(path("scenario.toml"));
    r.fit = std::move(fit);
    return r;
  }

  std::filesystem::path dir_;
};

const FittedParameter& parameter(const MeasuredCalibrationReport& r, const std::string& name) {
  for (const FittedParameter& p : r.parameters) {
    if (p.name == name) return p;
  }
  throw std::runtime_error("no parameter " + name);
}

TEST_F(MeasuredCalibration, RecoversKnownParametersFromTheDefaults) {
  write("truth.toml", "[compute]\nbest_gemm_efficiency = 0.62\nmemory_efficiency = 0.7\n");
  write_measured("truth.toml", kRows.size());
  const MeasuredCalibrationReport r = run_measured_calibration(request({"best_gemm_efficiency", "memory_efficiency"}));
  EXPECT_NEAR(parameter(r, "best_gemm_efficiency").fitted, 0.62, 0.62 * 1e-3);
  EXPECT_NEAR(parameter(r, "memory_efficiency").fitted, 0.7, 0.7 * 1e-3);
  const models::ComputeCalibration defaults = models::default_compute_calibration(models::find_gpu("A100-SXM-80GB"));
  EXPECT_EQ(parameter(r, "best_gemm_efficiency").prior, defaults.best_gemm_efficiency);
  for (const CalibratedRow& row : r.rows) {
    EXPECT_NEAR(relative_error(row.after, row.measured), 0.0, 1e-4) << row.name;
    EXPECT_GT(std::abs(relative_error(row.before, row.measured)), 0.01) << row.name;
    // (d) Leave-one-out on exact data predicts the left-out row as well as the fit.
    ASSERT_TRUE(row.leave_one_out.has_value()) << row.name;
    EXPECT_NEAR(relative_error(*row.leave_one_out, row.measured), 0.0, 1e-4) << row.name;
  }
  EXPECT_LT(*mean_abs_leave_one_out_error(r), 1e-4);
}

TEST_F(MeasuredCalibration, TheFittedFileReproducesTheFittedPredictions) {
  write("truth.toml", "[compute]\nbest_gemm_efficiency = 0.7\n[network]\nnetwork_efficiency = 0.8\n");
  write_measured("truth.toml", 3);
  MeasuredCalibrationRequest req = request({"best_gemm_efficiency", "network_efficiency"});
  req.leave_one_out = false;
  const MeasuredCalibrationReport r = run_measured_calibration(req);
  write("fitted.toml", to_calibration_toml(r, "2026-01-01T00:00:00Z"));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(simulated(i, "fitted.toml"), r.rows[i].after) << i;
  EXPECT_EQ(r.leave_one_out_note, "not asked for");
}

TEST_F(MeasuredCalibration, FewerRowsThanParametersAreRefused) {
  write_measured("", 2);
  try {
    run_measured_calibration(request({"best_gemm_efficiency", "memory_efficiency", "nvlink_efficiency"}));
    ADD_FAILURE() << "no error";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--fit");
    EXPECT_NE(std::string(e.what()).find("at most 2 parameters"), std::string::npos) << e.what();
  }
}

TEST_F(MeasuredCalibration, AParameterNoRowUsesIsHeldAtItsPrior) {
  // Every row runs the unfused attention kernel: FlashAttention's efficiency changes nothing.
  write("truth.toml", "[compute]\nbest_gemm_efficiency = 0.7\n");
  write_measured("truth.toml", 3);
  const MeasuredCalibrationReport r =
      run_measured_calibration(request({"best_gemm_efficiency", "flash_attention_forward_efficiency"}));
  const FittedParameter& flash = parameter(r, "flash_attention_forward_efficiency");
  EXPECT_TRUE(flash.held);
  EXPECT_EQ(flash.weakness, Weakness::kInsensitive);
  EXPECT_EQ(flash.fitted, flash.prior);
  EXPECT_EQ(parameter_status(flash), "held: no row is sensitive to it");
  EXPECT_NEAR(parameter(r, "best_gemm_efficiency").fitted, 0.7, 0.7 * 1e-3);
  // One parameter fitted on three rows: leave-one-out runs.
  EXPECT_TRUE(r.leave_one_out_note.empty()) << r.leave_one_out_note;
}

TEST_F(MeasuredCalibration, PredictRowsAreReportedNotFitted) {
  write("truth.toml", "[compute]\nbest_gemm_efficiency = 0.7\n");
  write_measured("truth.toml", 2);
  write_measured("truth.toml", 4, "more.csv");
  MeasuredCalibrationRequest req = request({"best_gemm_efficiency"});
  req.predict_csv = path("more.csv");
  const MeasuredCalibrationReport r = run_measured_calibration(req);
  ASSERT_EQ(r.rows.size(), 6U);
  EXPECT_FALSE(r.rows[2].fitted);
  for (std::size_t i = 2; i < r.rows.size(); ++i) {
    EXPECT_NEAR(relative_error(r.rows[i].after, r.rows[i].measured), 0.0, 1e-4) << i;
  }
  EXPECT_NEAR(*mean_abs_error(r, false, false), 0.0, 1e-4);
}

TEST_F(MeasuredCalibration, SameInputsGiveTheSameReport) {
  write("truth.toml", "[compute]\nbest_gemm_efficiency = 0.7\n");
  write_measured("truth.toml", 2);
  MeasuredCalibrationRequest one = request({"best_gemm_efficiency"});
  one.threads = 1;
  MeasuredCalibrationRequest two = one;
  two.threads = 2;
  EXPECT_EQ(to_json(run_measured_calibration(one)), to_json(run_measured_calibration(two)));
}

}  // namespace
}  // namespace megasim::scenarios
