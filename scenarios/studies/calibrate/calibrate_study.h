// `megasim calibrate`: measure on real hardware what the cost model needs (models/compute_cost.h),
// fit the model's parameters to it, and write a calibration file that scenarios load
// (`[calibration] file = ...`, calibration_file.h). The measuring is a backend's (a Probe); the
// study decides what to measure, fits, and compares the measurements with the public defaults, so
// it runs and is tested without a GPU.
//
// What is measured:
//  - a GEMM sweep: m = n = 8192 with k from 256 to 16384 (the k-dependence the curve models) and
//    4096³ and 16384³; the fit of best_gemm_efficiency and gemm_k_overhead uses the shapes with
//    m, n >= 8192, where the curve's tile and wave factor is nearly 1;
//  - every distinct GEMM of the scenario's plan (the ops of its kernel lists), with how often one
//    rank of each pipeline stage runs it per iteration;
//  - on a GPU with FP8 tensor cores (GpuSpec::peak_fp8_dense_tflops > 0 and the probe's
//    fp8_gemm_seconds), the curve-fit shapes of the sweep and the plan's GEMMs whose sides are
//    multiples of 16 (cuBLASLt's FP8 rule) again with FP8 E4M3 operands: fp8_gemm_efficiency_scale
//    is the median over them of (FP8 efficiency over the FP8 peak) / (bf16 efficiency over the bf16
//    peak) of the same shape, capped at 1 / best_gemm_efficiency (the FP8 peak);
//  - the copy bandwidth of a large buffer (memory_efficiency) and the gap between back-to-back
//    kernels (reported only: the file's launch overhead models an eager PyTorch training loop,
//    whose launch path is not this backend's).
//  - when the job has several GPUs (`--gpus N`), the collectives and links between them over NCCL,
//    fitted by scenarios/studies/calibrate/collective_calibration.h ([network] and [collective] of the file).
// Attention kernels are not measured here yet: their fields keep the defaults.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/probe.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/workload.h"
#include "scenarios/config/scenario.h"
#include "scenarios/studies/calibrate/collective_calibration.h"

namespace megasim::scenarios {

// A distinct GEMM shape of a workload and how many times it runs per iteration, summed over one
// rank of each pipeline stage.
struct PlanGemm {
  models::GemmShape shape;
  std::int64_t calls = 0;
};
// In order of first appearance (stage 0 first).
std::vector<PlanGemm> plan_gemms(const models::Workload& workload);

struct GemmMeasurement {
  models::GemmShape shape;
  std::int64_t calls = 0;          // per iteration (plan GEMMs); 0 for the sweep
  double measured_s = 0;           // one kernel
  double default_s = 0;            // predicted with the public defaults (launch overhead left out)
  double fitted_s = 0;             // predicted with the fitted curve, before measured points
  double measured_efficiency = 0;  // FLOP/s over the GPU's bf16 peak
};

// A GEMM measured with FP8 E4M3 operands beside its bf16 measurement.
struct Fp8GemmMeasurement {
  models::GemmShape shape;
  double measured_s = 0;
  double measured_efficiency = 0;  // FLOP/s over the GPU's FP8 peak
  double bf16_efficiency = 0;      // the same shape's bf16 measurement, over the bf16 peak
  [[nodiscard]] double ratio() const { return measured_efficiency / bf16_efficiency; }
};

struct CalibrationReport {
  std::string backend;
  std::string device;
  std::string gpu;  // the GpuSpec name the efficiencies are relative to
  std::string scenario;
  double peak_flops = 0;
  std::vector<GemmMeasurement> sweep;
  std::vector<GemmMeasurement> plan;
  std::vector<Fp8GemmMeasurement> fp8;       // empty: FP8 not measured (the GPU has none)
  double fp8_peak_flops = 0;                 // what the FP8 efficiencies are relative to
  std::string fp8_not_measured;              // the probe's reason, on a GPU with FP8
  double best_measured_gemm_efficiency = 0;  // the sweep's best
  double copy_bytes_per_s = 0;
  double kernel_gap_s = 0;
  // The defaults with the measured fields replaced: what the file carries.
  models::ComputeCalibration calibration;
  // Plan GEMM time per iteration (sum of calls × time) predicted over measured, minus one.
  double plan_gemm_error_default = 0;
  double plan_gemm_error_fitted = 0;
  // The links' fits (probe.links given): what the file's [network] and [collective] carry.
  std::optional<CollectiveCalibration> collectives;
};

// The sweep shapes, in measuring order.
std::vector<models::GemmShape> calibration_sweep();

// Fits best_gemm_efficiency and gemm_k_overhead of `base` to measured efficiencies: with w(shape)
// the curve's tile and wave factor (gemm_efficiency at best 1 and no k overhead), the curve says
// efficiency / w = best · k / (k + k0), i.e. w / efficiency = 1/best + (k0/best) · (1/k), a straight
// line in 1/k fitted by least squares. Needs two distinct k; throws sim::ConfigError otherwise.
// The fitted best is capped at 1 and k0 floored at 0.
void fit_gemm_curve(const std::vector<GemmMeasurement>& measurements, const models::GpuSpec& gpu,
                    models::ComputeCalibration& calibration);

// Runs the measurements of the header comment on `probe` for `scenario`'s plan on `gpu`. The links'
// line rates are the scenario's: cluster.nvlink_gbytes_per_s (when 0, half of `gpu`'s NVLink total)
// and scenario_nic_gbps (device.h).
CalibrationReport run_calibration(const Scenario& scenario, const models::GpuSpec& gpu, const backend::GpuProbe& probe);

// The calibration file (TOML): the measured compute fields with the measurements as comments.
std::string to_calibration_toml(const CalibrationReport& report);
std::string to_text(const CalibrationReport& report);
std::string to_json(const CalibrationReport& report);

}  // namespace megasim::scenarios
