// The CUDA probes on a real GPU (skipped where none is visible): the GEMM computes what it claims,
// and the timings respect the hardware's physical bounds.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm_probe.h"
#include "backend/cuda/memory_probe.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"

namespace megasim::backend::cuda {
namespace {

// The gpus.csv entry of the first visible GPU, or nullptr (test skipped) without one.
const models::GpuSpec* first_gpu_spec() {
  const std::vector<GpuInfo> gpus = visible_gpus();
  return gpus.empty() ? nullptr : models::gpu_for_device_name(gpus.front().name);
}

#define REQUIRE_KNOWN_GPU(spec)                   \
  const models::GpuSpec* spec = first_gpu_spec(); \
  if (spec == nullptr) GTEST_SKIP() << "no visible GPU of a family in gpus.csv"

// The libraries are opened on first use, not at start; where the toolkit is installed (every build
// machine of the CUDA backend) they open without a GPU.
TEST(CudaLibraries, OpenOnFirstUseWithoutAGpu) {
  EXPECT_NE(cublaslt().matmul, nullptr);
  EXPECT_NE(nccl().get_version, nullptr);
  EXPECT_EQ(nccl_version().substr(0, 2), std::to_string(NCCL_MAJOR) + ".");
}

TEST(CudaProbe, GemmMatchesHostReferenceInEveryLayout) {
  REQUIRE_KNOWN_GPU(spec);
  GemmProbe probe;
  EXPECT_LT(probe.max_relative_error({64, 48, 96, 1}), 1.0 / 64);
  EXPECT_LT(probe.max_relative_error({96, 80, 112, 3}), 1.0 / 64);
  EXPECT_LT(probe.max_relative_error({1, 256, 33, 1}), 1.0 / 64);
}

TEST(CudaProbe, GemmTimesAreBelowPeakAndGrowWithWork) {
  REQUIRE_KNOWN_GPU(spec);
  GemmProbe probe;
  const models::GemmShape small{4096, 4096, 4096, 1};
  const models::GemmShape large{8192, 8192, 8192, 1};
  const double small_s = probe.median_seconds({small.m, small.n, small.k, small.batch}, 10);
  const double large_s = probe.median_seconds({large.m, large.n, large.k, large.batch}, 10);
  const double peak = spec->peak_bf16_dense_tflops * 1e12;
  EXPECT_LE(models::gemm_flops(small) / small_s, peak);
  EXPECT_LE(models::gemm_flops(large) / large_s, peak);
  // Eight times the work cannot take less than four times as long on a GPU the small one fills.
  EXPECT_GT(large_s, 4 * small_s);
}

// FP8 E4M3 operands on a GPU with FP8 tensor cores (compute capability 8.9 or more): the same
// layouts against the host reference, a timing below the FP8 peak and above the bf16 GEMM's FLOP/s
// at the bf16 peak's half (FP8 runs at twice bf16's peak); sides not multiples of 16 are refused.
TEST(CudaProbe, Fp8GemmMatchesHostReferenceAndRunsBelowTheFp8Peak) {
  REQUIRE_KNOWN_GPU(spec);
  const GpuInfo device = visible_gpus().front();
  if (device.compute_capability_major * 10 + device.compute_capability_minor < 89 || spec->peak_fp8_dense_tflops <= 0) {
    GTEST_SKIP() << "no FP8 tensor cores on " << device.name;
  }
  GemmProbe probe;
  constexpr GemmOperands kFp8 = GemmOperands::kFp8E4m3;
  EXPECT_LT(probe.max_relative_error({64, 48, 96, 1, kFp8}), 1.0 / 64);
  EXPECT_LT(probe.max_relative_error({96, 80, 112, 3, kFp8}), 1.0 / 64);
  EXPECT_THROW(probe.max_relative_error({1, 256, 33, 1, kFp8}), CudaError);
  const models::GemmShape shape{8192, 8192, 8192, 1};
  const double fp8_s = probe.median_seconds({shape.m, shape.n, shape.k, 1, kFp8}, 10);
  const double bf16_s = probe.median_seconds({shape.m, shape.n, shape.k, 1}, 10);
  EXPECT_LE(models::gemm_flops(shape) / fp8_s, spec->peak_fp8_dense_tflops * 1e12);
  EXPECT_LT(fp8_s, bf16_s);  // FP8 tensor cores: twice the peak, half the operand bytes
}

TEST(CudaProbe, CopyBandwidthIsBelowTheHbmBandwidth) {
  REQUIRE_KNOWN_GPU(spec);
  const double bytes_per_s = copy_bandwidth_bytes_per_s(std::size_t{1} << 30, 5);
  EXPECT_GT(bytes_per_s, 0.3 * spec->hbm_tbytes_per_s * 1e12);
  EXPECT_LE(bytes_per_s, spec->hbm_tbytes_per_s * 1e12);
}

TEST(CudaProbe, BackToBackKernelsTakeMicroseconds) {
  REQUIRE_KNOWN_GPU(spec);
  const double gap = back_to_back_kernel_seconds(1000);
  EXPECT_GT(gap, 0);
  EXPECT_LT(gap, 1e-4);
}

}  // namespace
}  // namespace megasim::backend::cuda
