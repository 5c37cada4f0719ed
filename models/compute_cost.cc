// GEMM and memory-bound kernel times. The GEMM efficiency curve models what costs a real kernel
// time besides its FLOPs: wave quantization (a GPU runs one output tile per SM at a time, so a last
// partial wave leaves SMs idle), tile padding (edge tiles compute a full tile), small tiles (lower
// operand reuse), and a per-tile fixed cost that short k loops cannot amortize.
#include <algorithm>
#include <cmath>
#include <limits>

#include "models/compute_cost.h"
#include "models/dtype_bytes.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Fraction of the tile-level peak that `tile` reaches on `shape`: tile efficiency × useful work
// over the work of all issued waves of padded tiles.
double tile_utilization(const GemmShape& shape, const GemmTile& tile, std::int64_t sm_count) {
  const std::int64_t tiles_m = ceil_div(shape.m, tile.m);
  const std::int64_t tiles_n = ceil_div(shape.n, tile.n);
  const std::int64_t tiles = tiles_m * tiles_n * shape.batch;
  const std::int64_t waves = ceil_div(tiles, sm_count);
  const double wave_fill = static_cast<double>(tiles) / static_cast<double>(waves * sm_count);
  const double padding =
      static_cast<double>(shape.m * shape.n) / static_cast<double>(tiles_m * tile.m * tiles_n * tile.n);
  return tile.relative_efficiency * wave_fill * padding;
}

// The curve without measured corrections: cuBLAS's heuristic picks the best tile for the shape.
double gemm_curve(const GemmShape& shape, const ComputeCalibration& calib) {
  double best_tile = 0;
  for (const GemmTile& tile : calib.gemm_tiles) {
    best_tile = std::max(best_tile, tile_utilization(shape, tile, calib.sm_count));
  }
  const auto k = static_cast<double>(shape.k);
  return calib.best_gemm_efficiency * best_tile * k / (k + calib.gemm_k_overhead);
}

double log_distance2(const GemmShape& shape, const GemmPoint& p) {
  const auto d = [](std::int64_t a, std::int64_t b) {
    const double x = std::log2(static_cast<double>(a)) - std::log2(static_cast<double>(b));
    return x * x;
  };
  return d(shape.m, p.m) + d(shape.n, p.n) + d(shape.k, p.k);
}

}  // namespace

double gemm_efficiency(const GemmShape& shape, const ComputeCalibration& calib) {
  MEGASIM_ASSERT(shape.m >= 1 && shape.n >= 1 && shape.k >= 1 && shape.batch >= 1, "GEMM dimensions must be >= 1");
  const double curve = gemm_curve(shape, calib);
  if (calib.gemm_points.empty()) return curve;
  const GemmPoint* nearest = nullptr;
  double nearest_d2 = std::numeric_limits<double>::infinity();
  for (const GemmPoint& p : calib.gemm_points) {
    const double d2 = log_distance2(shape, p);
    if (d2 < nearest_d2) {
      nearest_d2 = d2;
      nearest = &p;
    }
  }
  const double at_point = gemm_curve(GemmShape{nearest->m, nearest->n, nearest->k, 1}, calib);
  return std::min(1.0, curve * nearest->efficiency / at_point);
}

double gemm_flops(const GemmShape& shape) {
  return 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k) *
         static_cast<double>(shape.batch);
}

double fp8_gemm_bytes(const GemmShape& shape) {
  const auto m = static_cast<double>(shape.m);
  const auto n = static_cast<double>(shape.n);
  const auto k = static_cast<double>(shape.k);
  return (m * k + k * n + kBf16Bytes * m * n) * static_cast<double>(shape.batch);
}

double gemm_bytes(const GemmShape& shape) {
  const auto m = static_cast<double>(shape.m);
  const auto n = static_cast<double>(shape.n);
  const auto k = static_cast<double>(shape.k);
  return kBf16Bytes * (m * k + k * n + m * n) * static_cast<double>(shape.batch);
}

double gemm_time_s(const GemmShape& shape, const GpuSpec& gpu, const ComputeCalibration& calib) {
  const double compute_s = gemm_flops(shape) / (gpu.peak_bf16_dense_tflops * 1e12 * gemm_efficiency(shape, calib));
  const double bytes = gemm_bytes(shape);
  const double memory_s = bytes / (gpu.hbm_tbytes_per_s * 1e12 * memory_efficiency_at(bytes, calib));
  return std::max(compute_s, memory_s) + static_cast<double>(calib.launch_overhead_ns) * 1e-9;
}

double fp8_gemm_time_s(const GemmShape& shape, const GpuSpec& gpu, const ComputeCalibration& calib) {
  MEGASIM_ASSERT(gpu.peak_fp8_dense_tflops > 0, "an FP8 GEMM on a GPU without FP8 (require_fp8_support)");
  const double efficiency = gemm_efficiency(shape, calib) * calib.fp8_gemm_efficiency_scale;
  const double compute_s = gemm_flops(shape) / (gpu.peak_fp8_dense_tflops * 1e12 * efficiency);
  const double bytes = fp8_gemm_bytes(shape);
  const double memory_s = bytes / (gpu.hbm_tbytes_per_s * 1e12 * memory_efficiency_at(bytes, calib));
  return std::max(compute_s, memory_s) + static_cast<double>(calib.launch_overhead_ns) * 1e-9;
}

double memory_bound_time_s(double bytes, const GpuSpec& gpu, const ComputeCalibration& calib) {
  MEGASIM_ASSERT(bytes >= 0, "a kernel cannot move a negative number of bytes");
  return bytes / (gpu.hbm_tbytes_per_s * 1e12 * memory_efficiency_at(bytes, calib)) +
         static_cast<double>(calib.launch_overhead_ns) * 1e-9;
}

double memory_efficiency_at(double bytes, const ComputeCalibration& calib) {
  if (calib.memory_points.empty()) return calib.memory_efficiency;
  const MemoryPoint* below = nullptr;  // the largest point at or under `bytes`
  const MemoryPoint* above = nullptr;  // the smallest point at or over it
  for (const MemoryPoint& p : calib.memory_points) {
    if (p.bytes <= bytes && (below == nullptr || p.bytes > below->bytes)) below = &p;
    if (p.bytes >= bytes && (above == nullptr || p.bytes < above->bytes)) above = &p;
  }
  if (below == nullptr) return above->efficiency;
  if (above == nullptr || above->bytes == below->bytes) return below->efficiency;
  const double t = std::log(bytes / below->bytes) / std::log(above->bytes / below->bytes);
  return below->efficiency + t * (above->efficiency - below->efficiency);
}

}  // namespace megasim::models
