// GPU specifications from ../shared/calibration/gpus.csv (vendor datasheets; best measured bf16
// GEMM throughput from stas00/ml-engineering), plus the A800 (an A100 with less NVLink; sources in
// gpu_spec.cc). The cost model's defaults derive from these.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace megasim::models {

struct GpuSpec {
  std::string name;                      // "A100-SXM-80GB", ...
  double peak_bf16_dense_tflops = 0;     // datasheet peak, dense bf16
  double hbm_gbytes = 0;                 // HBM capacity, GB (1e9 bytes)
  double hbm_tbytes_per_s = 0;           // HBM bandwidth, TB/s
  double nvlink_total_gbytes_per_s = 0;  // NVLink, both directions together
  double best_gemm_efficiency = 0;       // best measured GEMM throughput / peak (0: unknown)
  double peak_fp8_dense_tflops = 0;      // datasheet peak, dense FP8 (0: no FP8 tensor cores)
};

// Throws sim::ConfigError("plan.fp8", format, ...) when plan.fp8 = `format` (other than "none") asks
// for FP8 GEMMs on a GPU without them.
void require_fp8_support(const GpuSpec& gpu, std::string_view format);

// Every known GPU, in the order of gpus.csv, then the A800.
std::span<const GpuSpec> known_gpus();
// Looks a GPU up by name; accepts the full name or a short alias ("A100", "H100", "H200", "H800",
// "A800").
// Throws sim::ConfigError(key, name, list of valid names) when unknown.
const GpuSpec& find_gpu(std::string_view name, std::string_view key = "cluster.gpu");
// The GPU a device reports itself as ("NVIDIA H200" -> H200-SXM-141GB): the first known GPU whose
// short alias the device name contains; nullptr when none does.
const GpuSpec* gpu_for_device_name(std::string_view device_name);

}  // namespace megasim::models
