#include "models/gpu_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "sim/error.h"

namespace megasim::models {
namespace {

// Source: ../shared/calibration/gpus.csv (NVIDIA A100 and H100 datasheets; best measured bf16
// matmul throughput from stas00/ml-engineering compute/accelerator/README.md; H200 shares the
// GH100 die and peak with H100 SXM; H800 from MegaScale-MoE Table 4, no GEMM measurement, so 0).
// Dense FP8 peaks from the H100 SXM datasheet (3,958 TFLOPS with sparsity, 1,979 dense), the same
// die in the H200 and H800; Ampere has no FP8 tensor cores (0).
// The A800 is not in gpus.csv: NVIDIA's statement of November 2022 introduced it for China under the
// October 2022 US export rules as the A100 with NVLink at 400 GB/s instead of 600 GB/s; the same
// GA100 compute (312 TFLOPS bf16 dense, 108 SMs, 80 GB HBM2e at 2.039 TB/s: the A800 SXM datasheet),
// so the A100's best measured GEMM efficiency holds for it.
// HBM capacity: the datasheets' (and gpus.csv's) "80 GB" and "141 GB" count binary gigabytes, as
// HBM stacks come in powers of two (the A100 80GB's five 16 GiB stacks; nvidia-smi reports 81,920
// MiB on it, 81,559 MiB on an H100 80GB and 143,771 MiB on an H200), so the table holds them in
// 1e9 bytes as every memory figure of megasim is: 80 GiB = 85.90 GB, 141 GiB = 151.40 GB.
constexpr double kGiB = 1.073741824;  // 1 GiB in GB
const std::array<GpuSpec, 5>& gpu_table() {
  static const std::array<GpuSpec, 5> table = {{
      {"A100-SXM-80GB", 312.0, 80.0 * kGiB, 2.039, 600.0, 0.869},
      {"H100-SXM-80GB", 989.0, 80.0 * kGiB, 3.35, 900.0, 0.803, 1979.0},
      {"H200-SXM-141GB", 989.0, 141.0 * kGiB, 4.8, 900.0, 0.803, 1979.0},
      {"H800-SXM-80GB", 989.0, 80.0 * kGiB, 3.35, 400.0, 0.0, 1979.0},
      {"A800-SXM-80GB", 312.0, 80.0 * kGiB, 2.039, 400.0, 0.869},
  }};
  return table;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The short alias is the name up to the first '-' ("A100-SXM-80GB" -> "A100").
std::string_view alias_of(std::string_view full_name) {
  return full_name.substr(0, full_name.find('-'));
}

}  // namespace

std::span<const GpuSpec> known_gpus() {
  return gpu_table();
}

const GpuSpec* gpu_for_device_name(std::string_view device_name) {
  for (const GpuSpec& gpu : gpu_table()) {
    if (device_name.find(alias_of(gpu.name)) != std::string_view::npos) return &gpu;
  }
  return nullptr;
}

const GpuSpec& find_gpu(std::string_view name, std::string_view key) {
  const std::string wanted = lower(name);
  std::string valid;
  for (const GpuSpec& gpu : gpu_table()) {
    if (wanted == lower(gpu.name) || wanted == lower(alias_of(gpu.name))) return gpu;
    if (!valid.empty()) valid += ", ";
    valid += gpu.name + " (" + std::string(alias_of(gpu.name)) + ")";
  }
  throw sim::ConfigError(std::string(key), std::string(name), "one of " + valid + ", case-insensitive");
}

void require_fp8_support(const GpuSpec& gpu, std::string_view format) {
  if (format != "none" && !(gpu.peak_fp8_dense_tflops > 0)) {
    throw sim::ConfigError("plan.fp8", std::string(format),
                           "none on " + gpu.name + ", which has no FP8 tensor cores (Hopper has: H100, H200, H800)");
  }
}

}  // namespace megasim::models
