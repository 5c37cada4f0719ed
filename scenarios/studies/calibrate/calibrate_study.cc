#include "scenarios/studies/calibrate/calibrate_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "models/plan.h"
#include "scenarios/config/device.h"
#include "scenarios/config/json_writer.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::int64_t kCurveFitMinSide = 8192;  // m, n at which the tile and wave factor is ~1

models::ComputeCalibration without_launch(models::ComputeCalibration c) {
  c.launch_overhead_ns = 0;
  return c;
}

double efficiency_of(const models::GemmShape& shape, double seconds, double peak_flops) {
  return models::gemm_flops(shape) / (seconds * peak_flops);
}

// Sum over rows of calls × predicted, over calls × measured, minus one.
double weighted_error(const std::vector<GemmMeasurement>& rows, double GemmMeasurement::*predicted) {
  double predicted_s = 0;
  double measured_s = 0;
  for (const GemmMeasurement& r : rows) {
    predicted_s += static_cast<double>(r.calls) * (r.*predicted);
    measured_s += static_cast<double>(r.calls) * r.measured_s;
  }
  return measured_s > 0 ? predicted_s / measured_s - 1 : 0;
}

std::string shape_text(const models::GemmShape& s) {
  return s.batch == 1 ? fmt::format("{}x{}x{}", s.m, s.n, s.k) : fmt::format("{}x{}x{} (x{})", s.m, s.n, s.k, s.batch);
}

// Opens a row's object with its shape's fields.
JsonWriter& begin_shape_row(JsonWriter& j, const models::GemmShape& s) {
  return j.begin_object().field("m", s.m).field("n", s.n).field("k", s.k).field("batch", s.batch);
}

void write_rows(JsonWriter& j, const std::vector<GemmMeasurement>& rows) {
  j.begin_array();
  for (const GemmMeasurement& r : rows) {
    begin_shape_row(j, r.shape)
        .field("calls_per_iteration", r.calls)
        .field("measured_s", r.measured_s)
        .field("measured_efficiency", r.measured_efficiency)
        .field("default_s", r.default_s)
        .field("fitted_s", r.fitted_s)
        .end_object();
  }
  j.end_array();
}

void append_rows(std::string& out, const char* title, const std::vector<GemmMeasurement>& rows) {
  out += fmt::format("{}\n  {:<26} {:>6} {:>11} {:>8} {:>6} {:>11} {:>8} {:>11} {:>8}\n", title, "m x n x k", "calls",
                     "measured us", "TFLOP/s", "eff", "default us", "error", "fitted us", "error");
  for (const GemmMeasurement& r : rows) {
    out += fmt::format("  {:<26} {:>6} {:>11.2f} {:>8.1f} {:>6.3f} {:>11.2f} {:>+7.1f}% {:>11.2f} {:>+7.1f}%\n",
                       shape_text(r.shape), r.calls, r.measured_s * 1e6,
                       models::gemm_flops(r.shape) / r.measured_s / 1e12, r.measured_efficiency, r.default_s * 1e6,
                       (r.default_s / r.measured_s - 1) * 100, r.fitted_s * 1e6, (r.fitted_s / r.measured_s - 1) * 100);
  }
}

// cuBLASLt's FP8 GEMMs need every side a multiple of 16.
bool fp8_shape(const models::GemmShape& s) {
  return s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0;
}

// The FP8 measurements of the header comment and the scale they give (r.calibration).
void measure_fp8(const backend::GpuProbe& probe, const models::GpuSpec& gpu, const std::vector<GemmMeasurement>& large,
                 CalibrationReport& r) {
  const double fp8_peak = gpu.peak_fp8_dense_tflops * 1e12;
  r.fp8_peak_flops = fp8_peak;
  const auto measure = [&](const GemmMeasurement& bf16) {
    Fp8GemmMeasurement m{bf16.shape};
    m.measured_s = probe.fp8_gemm_seconds(bf16.shape);
    m.measured_efficiency = efficiency_of(bf16.shape, m.measured_s, fp8_peak);
    m.bf16_efficiency = bf16.measured_efficiency;
    if (m.measured_efficiency > 1) {
      throw sim::ConfigError(
          "--gpu", gpu.name,
          fmt::format("a GPU whose FP8 peak is at least the {:.0f} TFLOP/s that {} measured on {}",
                      models::gemm_flops(bf16.shape) / m.measured_s / 1e12, probe.device, shape_text(bf16.shape)));
    }
    r.fp8.push_back(m);
  };
  for (const GemmMeasurement& m : large) measure(m);
  for (const GemmMeasurement& m : r.plan) {
    const bool measured = std::any_of(r.fp8.begin(), r.fp8.end(), [&](const Fp8GemmMeasurement& f) {
      return std::tie(f.shape.m, f.shape.n, f.shape.k, f.shape.batch) ==
             std::tie(m.shape.m, m.shape.n, m.shape.k, m.shape.batch);
    });
    if (!measured && fp8_shape(m.shape)) measure(m);
  }
  std::vector<double> ratios;
  for (const Fp8GemmMeasurement& m : r.fp8) ratios.push_back(m.ratio());
  if (ratios.empty()) return;
  // The median (the mean of the middle two for an even count).
  std::sort(ratios.begin(), ratios.end());
  const std::size_t half = ratios.size() / 2;
  const double median = ratios.size() % 2 == 1 ? ratios[half] : (ratios[half - 1] + ratios[half]) / 2;
  r.calibration.fp8_gemm_efficiency_scale = std::min(median, 1 / r.calibration.best_gemm_efficiency);
}

}  // namespace

std::vector<PlanGemm> plan_gemms(const models::Workload& workload) {
  std::vector<PlanGemm> out;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::size_t> index;
  for (const models::StageProgram& stage : workload.stages) {
    for (const models::Task& task : stage.tasks) {
      if (task.kind != models::TaskKind::kCompute) continue;
      for (const models::Task::KernelRun& run : task.runs) {
        for (const models::LayerOp& op : workload.kernels[static_cast<std::size_t>(run.kernels)].ops) {
          if (op.kind != models::OpKind::kGemm) continue;
          const auto key = std::make_tuple(op.shape.m, op.shape.n, op.shape.k, op.shape.batch);
          const auto [it, added] = index.emplace(key, out.size());
          if (added) out.push_back(PlanGemm{op.shape, 0});
          out[it->second].calls += run.repeat;
        }
      }
    }
  }
  return out;
}

std::vector<models::GemmShape> calibration_sweep() {
  std::vector<models::GemmShape> shapes;
  for (std::int64_t k = 256; k <= 16384; k *= 2) shapes.push_back({8192, 8192, k, 1});
  shapes.push_back({4096, 4096, 4096, 1});
  shapes.push_back({16384, 16384, 16384, 1});
  return shapes;
}

void fit_gemm_curve(const std::vector<GemmMeasurement>& measurements, const models::GpuSpec& gpu,
                    models::ComputeCalibration& calibration) {
  models::ComputeCalibration unit = calibration;
  unit.best_gemm_efficiency = 1;
  unit.gemm_k_overhead = 0;
  unit.gemm_points.clear();
  // Least squares of y = w / efficiency against x = 1 / k.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const GemmMeasurement& m : measurements) {
    const double efficiency = efficiency_of(m.shape, m.measured_s, gpu.peak_bf16_dense_tflops * 1e12);
    const double x = 1.0 / static_cast<double>(m.shape.k);
    const double y = models::gemm_efficiency(m.shape, unit) / efficiency;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double variance = n * sxx - sx * sx;
  if (n < 2 || variance <= 1e-12 * sxx * n) {
    throw sim::ConfigError("calibrate.gemm_sweep", fmt::format("{} measurements", n),
                           "GEMMs at two or more distinct k to fit the k overhead");
  }
  const double slope = (n * sxy - sx * sy) / variance;
  const double intercept = (sy - slope * sx) / n;
  if (intercept <= 0) {
    throw sim::ConfigError("calibrate.gemm_sweep", fmt::format("intercept {}", intercept),
                           "efficiencies that level off as k grows");
  }
  calibration.best_gemm_efficiency = std::min(1.0, 1.0 / intercept);
  calibration.gemm_k_overhead = std::max(0.0, slope / intercept);
}

CalibrationReport run_calibration(const Scenario& scenario, const models::GpuSpec& gpu,
                                  const backend::GpuProbe& probe) {
  const models::ResolvedPlan plan =
      models::resolve_plan(scenario.model, scenario.plan, scenario.cluster.gpus, scenario.cluster.gpus_per_server);
  const models::Workload workload = models::build_workload(scenario.model, plan);

  CalibrationReport r;
  r.backend = probe.backend;
  r.device = probe.device;
  r.gpu = gpu.name;
  r.scenario = scenario.name;
  r.peak_flops = gpu.peak_bf16_dense_tflops * 1e12;
  const models::ComputeCalibration defaults = models::default_compute_calibration(gpu);
  const models::ComputeCalibration default_kernel = without_launch(defaults);

  auto measure = [&](const models::GemmShape& shape, std::int64_t calls) {
    GemmMeasurement m{shape, calls};
    m.measured_s = probe.gemm_seconds(shape);
    m.measured_efficiency = efficiency_of(shape, m.measured_s, r.peak_flops);
    if (m.measured_efficiency > 1) {
      throw sim::ConfigError(
          "--gpu", gpu.name,
          fmt::format("a GPU whose bf16 peak is at least the {:.0f} TFLOP/s that {} measured on {}",
                      models::gemm_flops(shape) / m.measured_s / 1e12, probe.device, shape_text(shape)));
    }
    m.default_s = models::gemm_time_s(shape, gpu, default_kernel);
    return m;
  };
  for (const models::GemmShape& shape : calibration_sweep()) r.sweep.push_back(measure(shape, 0));
  for (const PlanGemm& g : plan_gemms(workload)) r.plan.push_back(measure(g.shape, g.calls));

  r.calibration = defaults;
  std::vector<GemmMeasurement> large;
  for (const GemmMeasurement& m : r.sweep) {
    if (m.shape.m >= kCurveFitMinSide && m.shape.n >= kCurveFitMinSide) large.push_back(m);
    r.best_measured_gemm_efficiency = std::max(r.best_measured_gemm_efficiency, m.measured_efficiency);
  }
  fit_gemm_curve(large, gpu, r.calibration);
  const models::ComputeCalibration fitted_kernel = without_launch(r.calibration);
  for (auto* rows : {&r.sweep, &r.plan}) {
    for (GemmMeasurement& m : *rows) m.fitted_s = models::gemm_time_s(m.shape, gpu, fitted_kernel);
  }
  // Every measured single GEMM becomes a point that corrects the curve near its shape.
  for (const auto* rows : {&r.sweep, &r.plan}) {
    for (const GemmMeasurement& m : *rows) {
      if (m.shape.batch != 1) continue;
      const bool known = std::any_of(
          r.calibration.gemm_points.begin(), r.calibration.gemm_points.end(),
          [&](const models::GemmPoint& p) { return p.m == m.shape.m && p.n == m.shape.n && p.k == m.shape.k; });
      if (!known) r.calibration.gemm_points.push_back({m.shape.m, m.shape.n, m.shape.k, m.measured_efficiency});
    }
  }

  if (probe.fp8_gemm_seconds && gpu.peak_fp8_dense_tflops > 0) measure_fp8(probe, gpu, large, r);
  r.fp8_not_measured = probe.fp8_not_measured;

  r.copy_bytes_per_s = probe.copy_bytes_per_s();
  r.calibration.memory_efficiency = std::min(1.0, r.copy_bytes_per_s / (gpu.hbm_tbytes_per_s * 1e12));
  r.kernel_gap_s = probe.kernel_gap_s();
  r.plan_gemm_error_default = weighted_error(r.plan, &GemmMeasurement::default_s);
  r.plan_gemm_error_fitted = weighted_error(r.plan, &GemmMeasurement::fitted_s);
  models::validate(r.calibration);
  if (probe.links) {
    const double nvlink_gbytes_per_s = scenario.cluster.nvlink_gbytes_per_s > 0 ? scenario.cluster.nvlink_gbytes_per_s
                                                                                : gpu.nvlink_total_gbytes_per_s / 2;
    r.collectives =
        calibrate_collectives(probe.links(), nvlink_gbytes_per_s * 1e9, scenario_nic_gbps(scenario) * 1e9 / 8);
  }
  return r;
}

std::string to_calibration_toml(const CalibrationReport& r) {
  std::string out = fmt::format(
      "# Measured by `megasim calibrate --backend {}` on {} (efficiencies relative to the {} bf16 peak,\n"
      "# {:.0f} TFLOP/s), with the GEMMs of scenario '{}'. Fields not listed keep the public defaults.\n"
      "# Best measured GEMM: {:.1f}% of peak. Copy bandwidth {:.0f} GB/s. Back-to-back kernels {:.2f} us apart\n"
      "# (not written: launch_overhead_us models an eager PyTorch loop).\n"
      "[compute]\n"
      "best_gemm_efficiency = {:.4f}\n"
      "gemm_k_overhead = {:.1f}\n"
      "memory_efficiency = {:.4f}\n"
      "gemm_points = [\n",
      r.backend, r.device, r.gpu, r.peak_flops / 1e12, r.scenario, r.best_measured_gemm_efficiency * 100,
      r.copy_bytes_per_s / 1e9, r.kernel_gap_s * 1e6, r.calibration.best_gemm_efficiency, r.calibration.gemm_k_overhead,
      r.calibration.memory_efficiency);
  for (const models::GemmPoint& p : r.calibration.gemm_points) {
    out += fmt::format("  {{ m = {}, n = {}, k = {}, efficiency = {:.4f} }},\n", p.m, p.n, p.k, p.efficiency);
  }
  out += "]\n";
  if (!r.fp8.empty()) {
    out += fmt::format(
        "# FP8 E4M3 GEMMs against bf16 ({} shapes; efficiency over the {:.0f} TFLOP/s FP8 peak, ratio to bf16's):\n",
        r.fp8.size(), r.fp8_peak_flops / 1e12);
    for (const Fp8GemmMeasurement& m : r.fp8) {
      out += fmt::format("#   {}: {:.4f}, ratio {:.4f}\n", shape_text(m.shape), m.measured_efficiency, m.ratio());
    }
    out += fmt::format("fp8_gemm_efficiency_scale = {:.4f}\n", r.calibration.fp8_gemm_efficiency_scale);
  }
  if (r.collectives) out += to_calibration_toml(*r.collectives);
  return out;
}

std::string to_text(const CalibrationReport& r) {
  const models::ComputeCalibration defaults = models::default_compute_calibration(models::find_gpu(r.gpu));
  std::string out = fmt::format("calibration on {} ({} backend) as {}, peak {:.0f} TFLOP/s bf16\n", r.device, r.backend,
                                r.gpu, r.peak_flops / 1e12);
  append_rows(out, "GEMM sweep", r.sweep);
  append_rows(out, fmt::format("GEMMs of the plan of '{}'", r.scenario).c_str(), r.plan);
  out += fmt::format(
      "best GEMM            {:.1f}% of peak\n"
      "fitted curve         best_gemm_efficiency {:.4f}, gemm_k_overhead {:.1f} (defaults {:.4f}, {:.1f})\n"
      "copy bandwidth       {:.0f} GB/s (memory_efficiency {:.4f})\n"
      "kernel gap           {:.2f} us\n"
      "plan GEMM time       defaults {:+.1f}%, fitted curve {:+.1f}% against measured (calls x time)\n",
      r.best_measured_gemm_efficiency * 100, r.calibration.best_gemm_efficiency, r.calibration.gemm_k_overhead,
      defaults.best_gemm_efficiency, defaults.gemm_k_overhead, r.copy_bytes_per_s / 1e9,
      r.calibration.memory_efficiency, r.kernel_gap_s * 1e6, r.plan_gemm_error_default * 100,
      r.plan_gemm_error_fitted * 100);
  if (r.fp8.empty()) {
    out += r.fp8_not_measured.empty() ? std::string("fp8 GEMMs            not measured (no FP8 tensor cores)\n")
                                      : "fp8 GEMMs            not measured: " + r.fp8_not_measured + "\n";
  } else {
    const auto by_ratio = [](const Fp8GemmMeasurement& a, const Fp8GemmMeasurement& b) {
      return a.ratio() < b.ratio();
    };
    const auto [lowest, highest] = std::minmax_element(r.fp8.begin(), r.fp8.end(), by_ratio);
    out += fmt::format(
        "fp8 GEMMs            fp8_gemm_efficiency_scale {:.4f} (the median FP8 / bf16 efficiency of {} shapes, "
        "{:.4f} to {:.4f}; FP8 peak {:.0f} TFLOP/s)\n",
        r.calibration.fp8_gemm_efficiency_scale, r.fp8.size(), lowest->ratio(), highest->ratio(),
        r.fp8_peak_flops / 1e12);
  }
  out += r.collectives ? to_text(*r.collectives)
                       : std::string("collectives          not measured (one GPU; --gpus N measures them over NCCL)\n");
  return out;
}

std::string to_json(const CalibrationReport& r) {
  JsonWriter j;
  j.begin_object()
      .field("backend", r.backend)
      .field("device", r.device)
      .field("gpu", r.gpu)
      .field("scenario", r.scenario)
      .field("peak_flops", r.peak_flops)
      .field("best_measured_gemm_efficiency", r.best_measured_gemm_efficiency)
      .field("copy_bytes_per_s", r.copy_bytes_per_s)
      .field("kernel_gap_s", r.kernel_gap_s)
      .field("plan_gemm_time_error_default", r.plan_gemm_error_default)
      .field("plan_gemm_time_error_fitted", r.plan_gemm_error_fitted);
  j.key("calibration")
      .begin_object()
      .field("best_gemm_efficiency", r.calibration.best_gemm_efficiency)
      .field("gemm_k_overhead", r.calibration.gemm_k_overhead)
      .field("memory_efficiency", r.calibration.memory_efficiency);
  if (!r.fp8.empty()) j.field("fp8_gemm_efficiency_scale", r.calibration.fp8_gemm_efficiency_scale);
  j.end_object();
  j.key("fp8").begin_array();
  for (const Fp8GemmMeasurement& m : r.fp8) {
    begin_shape_row(j, m.shape)
        .field("measured_s", m.measured_s)
        .field("measured_efficiency", m.measured_efficiency)
        .field("bf16_efficiency", m.bf16_efficiency)
        .end_object();
  }
  j.end_array();
  j.key("sweep");
  write_rows(j, r.sweep);
  j.key("plan");
  write_rows(j, r.plan);
  j.key("collectives");
  if (r.collectives) {
    write_json(j, *r.collectives);
  } else {
    j.null();
  }
  j.end_object();
  return j.str() + "\n";
}

}  // namespace megasim::scenarios
