// The calibration study without a GPU: a probe that times GEMMs by a known curve must give that
// curve back, the file it writes must load to the same fields, and the plan's GEMMs are the ones
// layer_ops.h builds, counted per iteration.
#include "scenarios/studies/calibrate/calibrate_study.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "scenarios/config/calibration_file.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

// A small GPT on 4 GPUs: TP 2, PP 2, 8 micro-batches.
Scenario small_scenario() {
  Scenario s;
  s.name = "small";
  s.cluster.gpus = 8;
  s.model.num_layers = 4;
  s.model.hidden_size = 1024;
  s.model.num_attention_heads = 16;
  s.model.num_query_groups = 16;
  s.model.ffn_hidden_size = 4096;
  s.model.seq_length = 512;
  s.model.vocab_size = 32000;
  s.plan = models::ParallelPlan{};
  s.plan.tensor_model_parallel_size = 2;
  s.plan.pipeline_model_parallel_size = 2;
  s.plan.micro_batch_size = 1;
  s.plan.global_batch_size = 16;  // dp = 2: 8 micro-batches per replica
  return s;
}

// Times every GEMM with the compute term of the curve `truth` (no memory bound, no launch).
backend::GpuProbe curve_probe(const models::GpuSpec& gpu, const models::ComputeCalibration& truth) {
  backend::GpuProbe p;
  p.backend = "test";
  p.device = "curve";
  p.gemm_seconds = [gpu, truth](const models::GemmShape& s) {
    return models::gemm_flops(s) / (gpu.peak_bf16_dense_tflops * 1e12 * models::gemm_efficiency(s, truth));
  };
  p.copy_bytes_per_s = [gpu] { return 0.9 * gpu.hbm_tbytes_per_s * 1e12; };
  p.kernel_gap_s = [] { return 2e-6; };
  return p;
}

models::ComputeCalibration truth_for(const models::GpuSpec& gpu) {
  models::ComputeCalibration truth = models::default_compute_calibration(gpu);
  truth.best_gemm_efficiency = 0.8;
  truth.gemm_k_overhead = 300;
  return truth;
}

TEST(CalibrateStudy, FitRecoversTheCurveThatTimedTheSweep) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  const CalibrationReport r = run_calibration(small_scenario(), gpu, curve_probe(gpu, truth_for(gpu)));
  EXPECT_NEAR(r.calibration.best_gemm_efficiency, 0.8, 1e-9);
  EXPECT_NEAR(r.calibration.gemm_k_overhead, 300, 1e-6);
  EXPECT_NEAR(r.calibration.memory_efficiency, 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(r.kernel_gap_s, 2e-6);
  for (const GemmMeasurement& m : r.sweep) {
    // The sweep's shapes are compute-bound, so the fitted curve predicts them exactly.
    EXPECT_NEAR(m.fitted_s / m.measured_s, 1.0, 1e-9) << m.shape.k;
    EXPECT_NEAR(m.measured_efficiency, models::gemm_efficiency(m.shape, truth_for(gpu)), 1e-12);
  }
}

TEST(CalibrateStudy, FileLoadsBackToTheMeasuredFields) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  const CalibrationReport r = run_calibration(small_scenario(), gpu, curve_probe(gpu, truth_for(gpu)));
  models::ComputeCalibration loaded = models::default_compute_calibration(gpu);
  backend::FabricParams fabric;
  apply_calibration_text(to_calibration_toml(r), "calibrate output", loaded, fabric);
  EXPECT_NEAR(loaded.best_gemm_efficiency, r.calibration.best_gemm_efficiency, 5e-5);
  EXPECT_NEAR(loaded.gemm_k_overhead, r.calibration.gemm_k_overhead, 0.05);
  EXPECT_NEAR(loaded.memory_efficiency, r.calibration.memory_efficiency, 5e-5);
  ASSERT_EQ(loaded.gemm_points.size(), r.calibration.gemm_points.size());
  // One point per distinct single GEMM measured (sweep and plan), at its measured efficiency.
  for (const models::GemmPoint& p : loaded.gemm_points) {
    const auto same = [&](const GemmMeasurement& m) {
      return m.shape.m == p.m && m.shape.n == p.n && m.shape.k == p.k;
    };
    const auto in_sweep = std::find_if(r.sweep.begin(), r.sweep.end(), same);
    const auto in_plan = std::find_if(r.plan.begin(), r.plan.end(), same);
    const GemmMeasurement& m = in_sweep != r.sweep.end() ? *in_sweep : *in_plan;
    ASSERT_TRUE(in_sweep != r.sweep.end() || in_plan != r.plan.end());
    EXPECT_NEAR(p.efficiency, m.measured_efficiency, 5e-5);
  }
}

// A probe whose FP8 GEMMs reach `ratio` times bf16's efficiency at each shape (each over its own
// peak), at most `ceiling` of the FP8 peak.
backend::GpuProbe fp8_probe(const models::GpuSpec& gpu, double ratio, double ceiling = 1) {
  backend::GpuProbe p = curve_probe(gpu, truth_for(gpu));
  p.fp8_gemm_seconds = [gpu, ratio, ceiling](const models::GemmShape& s) {
    const double efficiency = std::min(ceiling, ratio * models::gemm_efficiency(s, truth_for(gpu)));
    return models::gemm_flops(s) / (gpu.peak_fp8_dense_tflops * 1e12 * efficiency);
  };
  return p;
}

bool multiple_of_16(const models::GemmShape& s) {
  return s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0;
}

// On an H200 the curve-fit shapes and the plan's GEMMs are timed again in FP8; FP8 at 0.7 of
// bf16's efficiency gives fp8_gemm_efficiency_scale 0.7, in the report, the file (loaded back) and
// the JSON. Without an FP8 probe, or on an A100 (no FP8 tensor cores), nothing is timed in FP8 and
// the file keeps the default.
TEST(CalibrateStudy, Fp8GemmsGiveTheEfficiencyScaleOverTheBf16Curve) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  const CalibrationReport r = run_calibration(small_scenario(), gpu, fp8_probe(gpu, 0.7));
  std::size_t expected = 0;
  for (const GemmMeasurement& m : r.sweep) expected += m.shape.m >= 8192 && m.shape.n >= 8192 ? 1u : 0u;
  for (const GemmMeasurement& m : r.plan) expected += multiple_of_16(m.shape) ? 1u : 0u;
  EXPECT_EQ(r.fp8.size(), expected);
  EXPECT_EQ(r.fp8_peak_flops, gpu.peak_fp8_dense_tflops * 1e12);
  for (const Fp8GemmMeasurement& m : r.fp8) {
    EXPECT_TRUE(multiple_of_16(m.shape));
    EXPECT_NEAR(m.ratio(), 0.7, 1e-9);
  }
  EXPECT_NEAR(r.calibration.fp8_gemm_efficiency_scale, 0.7, 1e-9);
  models::ComputeCalibration loaded = models::default_compute_calibration(gpu);
  backend::FabricParams fabric;
  apply_calibration_text(to_calibration_toml(r), "calibrate output", loaded, fabric);
  EXPECT_NEAR(loaded.fp8_gemm_efficiency_scale, 0.7, 5e-5);
  EXPECT_NE(to_json(r).find("\"fp8_gemm_efficiency_scale\": 0.7"), std::string::npos) << to_json(r);
  EXPECT_NE(to_text(r).find("fp8_gemm_efficiency_scale 0.7000"), std::string::npos) << to_text(r);

  const CalibrationReport bf16_only = run_calibration(small_scenario(), gpu, curve_probe(gpu, truth_for(gpu)));
  EXPECT_TRUE(bf16_only.fp8.empty());
  EXPECT_EQ(bf16_only.calibration.fp8_gemm_efficiency_scale, 1);
  EXPECT_EQ(to_calibration_toml(bf16_only).find("fp8_gemm"), std::string::npos);
  backend::GpuProbe failed = curve_probe(gpu, truth_for(gpu));
  failed.fp8_not_measured = "no FP8 algorithm";
  EXPECT_NE(to_text(run_calibration(small_scenario(), gpu, failed))
                .find("fp8 GEMMs            not measured: no FP8 "
                      "algorithm"),
            std::string::npos);
  const models::GpuSpec& a100 = models::find_gpu("A100-SXM-80GB");
  ASSERT_EQ(a100.peak_fp8_dense_tflops, 0);
  backend::GpuProbe a100_probe = curve_probe(a100, truth_for(a100));
  a100_probe.fp8_gemm_seconds = [](const models::GemmShape&) -> double {
    ADD_FAILURE() << "an FP8 GEMM timed on an A100";
    return 1;
  };
  EXPECT_TRUE(run_calibration(small_scenario(), a100, a100_probe).fp8.empty());
}

// FP8 twice as efficient as bf16 where bf16 is far from its best (small k), up to 95% of the FP8
// peak: the median ratio exceeds 1 / best_gemm_efficiency, so the scale is capped there (the
// curve's best times the scale reaches the FP8 peak, no more); an FP8 GEMM faster than the FP8 peak
// names the GPU option.
TEST(CalibrateStudy, Fp8ScaleIsCappedAtTheFp8Peak) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  const CalibrationReport r = run_calibration(small_scenario(), gpu, fp8_probe(gpu, 2.0, 0.95));
  EXPECT_DOUBLE_EQ(r.calibration.fp8_gemm_efficiency_scale, 1 / r.calibration.best_gemm_efficiency);
  try {
    (void)run_calibration(small_scenario(), gpu, fp8_probe(gpu, 3.0, 1.2));
    ADD_FAILURE() << "an FP8 GEMM above the FP8 peak passed";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--gpu");
    EXPECT_NE(std::string(e.what()).find("FP8 peak"), std::string::npos) << e.what();
  }
}

TEST(CalibrateStudy, PlanGemmsAreTheLayerGemmsCountedPerIteration) {
  const Scenario s = small_scenario();
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  ASSERT_EQ(plan.num_microbatches, 8);
  const std::vector<PlanGemm> gemms = plan_gemms(models::build_workload(s.model, plan));
  const std::int64_t tokens = 512;  // seq × micro-batch, unlike h so that no two GEMMs share a shape by chance
  const auto calls = [&](std::int64_t m, std::int64_t n, std::int64_t k) -> std::int64_t {
    for (const PlanGemm& g : gemms) {
      if (g.shape.m == m && g.shape.n == n && g.shape.k == k && g.shape.batch == 1) return g.calls;
    }
    return 0;
  };
  // Forward QKV: tokens × 3h/t × h, once per layer per micro-batch: 4 layers (2 per stage, both
  // stages counted) × 8 micro-batches. Its data gradient (m, k, n) and weight gradient (k, n, m)
  // run as often in backward (no recompute in this plan).
  EXPECT_EQ(calls(tokens, 3 * 1024 / 2, 1024), 4 * 8);
  EXPECT_EQ(calls(tokens, 1024, 3 * 1024 / 2), 4 * 8);
  EXPECT_EQ(calls(1024, 3 * 1024 / 2, tokens), 4 * 8);
  // MLP: fc1 is tokens × f/t × h, fc2 tokens × h × f/t; fc2's data gradient has fc1's forward
  // shape and fc1's data gradient fc2's, so each shape runs twice per layer and micro-batch.
  EXPECT_EQ(calls(tokens, 4096 / 2, 1024), 2 * 4 * 8);
  EXPECT_EQ(calls(tokens, 1024, 4096 / 2), 2 * 4 * 8);
  // Logits on the last stage only: tokens × padded vocab / t × h.
  EXPECT_EQ(calls(tokens, plan.padded_vocab_size / 2, 1024), 8);
}

TEST(CalibrateStudy, AGemmFasterThanThePeakNamesTheGpuOption) {
  const models::GpuSpec& gpu = models::find_gpu("A100");
  backend::GpuProbe p = curve_probe(gpu, truth_for(gpu));
  p.gemm_seconds = [gpu](const models::GemmShape& s) {
    return models::gemm_flops(s) / (2.0 * gpu.peak_bf16_dense_tflops * 1e12);
  };
  try {
    run_calibration(small_scenario(), gpu, p);
    FAIL() << "a GEMM at twice the peak was accepted";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--gpu");
  }
}

// `calibrate` names the GPU from the device's own name (as CUDA reports it).
TEST(CalibrateStudy, DeviceNamesMapToTheirGpuSpec) {
  EXPECT_EQ(models::gpu_for_device_name("NVIDIA H200")->name, "H200-SXM-141GB");
  EXPECT_EQ(models::gpu_for_device_name("NVIDIA A100-SXM4-80GB")->name, "A100-SXM-80GB");
  EXPECT_EQ(models::gpu_for_device_name("NVIDIA H100 80GB HBM3")->name, "H100-SXM-80GB");
  EXPECT_EQ(models::gpu_for_device_name("Tesla T4"), nullptr);
}

TEST(CalibrateStudy, CurveFitNeedsTwoDistinctK) {
  const models::GpuSpec& gpu = models::find_gpu("H200");
  models::ComputeCalibration c = models::default_compute_calibration(gpu);
  std::vector<GemmMeasurement> one_k{{{8192, 8192, 4096, 1}, 0, 1e-3}, {{16384, 16384, 4096, 1}, 0, 4e-3}};
  EXPECT_THROW(fit_gemm_curve(one_k, gpu, c), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::scenarios
