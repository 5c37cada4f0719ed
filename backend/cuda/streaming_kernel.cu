#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/streaming_kernel.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kVector = 8;  // bf16 values per 16-byte load or store
constexpr unsigned kThreads = 256;
constexpr unsigned kBlocksPerSm = 8;

std::size_t whole_vectors(std::size_t elements) {
  return (elements + kVector - 1) / kVector * kVector;
}

// y = scale * x + shift over n elements: 16-byte vectors of 8 values, then the last n % 8 singly.
__global__ void affine_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, std::size_t n,
                            float scale, float shift) {
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const __nv_bfloat162 scale2 = __float2bfloat162_rn(scale);
  const __nv_bfloat162 shift2 = __float2bfloat162_rn(shift);
  const std::size_t vectors = n / kVector;
  const auto* xv = reinterpret_cast<const uint4*>(x);
  auto* yv = reinterpret_cast<uint4*>(y);
  for (std::size_t i = first; i < vectors; i += stride) {
    uint4 v = xv[i];
    auto* pairs = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
    for (int j = 0; j < 4; ++j) pairs[j] = __hfma2(pairs[j], scale2, shift2);
    yv[i] = v;
  }
  for (std::size_t i = vectors * kVector + first; i < n; i += stride) {
    y[i] = __hfma(x[i], scale2.x, shift2.x);
  }
}

}  // namespace

std::size_t StreamingKernel::elements_for(double bytes) {
  MEGASIM_ASSERT(std::isfinite(bytes) && bytes >= 0, "streaming op with negative or non-finite bytes");
  return std::max<std::size_t>(1, static_cast<std::size_t>(bytes / 4.0));
}

std::size_t StreamingKernel::device_bytes_for(double max_bytes) {
  return 2 * whole_vectors(elements_for(max_bytes)) * sizeof(__nv_bfloat16);
}

StreamingKernel::StreamingKernel(double max_bytes) : capacity_(elements_for(max_bytes)) {
  int device = 0;
  int sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  max_blocks_ = std::max(1u, static_cast<unsigned>(sms) * kBlocksPerSm);
  DeviceBuffer memory(device_bytes_for(max_bytes), "streaming kernel buffers");
  check(cudaMemset(memory.get(), 0, memory.bytes()), "cudaMemset");
  // The caller's streams may not synchronise with the default stream the memset ran on.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  memory_ = memory.release();
  x_ = memory_;
  y_ = static_cast<__nv_bfloat16*>(memory_) + whole_vectors(capacity_);
}

StreamingKernel::~StreamingKernel() {
  cudaFree(memory_);
}

void StreamingKernel::run(double bytes, cudaStream_t stream) {
  const std::size_t n = elements_for(bytes);
  MEGASIM_ASSERT(n <= capacity_, "streaming op larger than the ops StreamingKernel was sized for");
  const std::size_t vectors = std::max<std::size_t>(1, n / kVector);
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(max_blocks_, (vectors + kThreads - 1) / kThreads));
  affine_bf16<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x_), static_cast<__nv_bfloat16*>(y_),
                                               n, kScale, kShift);
  check(cudaGetLastError(), "affine_bf16");
}

}  // namespace megasim::backend::cuda
