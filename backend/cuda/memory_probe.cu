#include <algorithm>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/memory_probe.h"

namespace megasim::backend::cuda {
namespace {

__global__ void copy_vectors(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void empty_kernel() {}

// Two events and their cleanup.
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EventPair() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double seconds() const {
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
};

struct Buffers {
  void* in = nullptr;
  void* out = nullptr;
  explicit Buffers(std::size_t bytes) {
    check(cudaMalloc(&in, bytes), "cudaMalloc");
    const cudaError_t status = cudaMalloc(&out, bytes);
    if (status != cudaSuccess) cudaFree(in);
    check(status, "cudaMalloc");
  }
  ~Buffers() {
    cudaFree(in);
    cudaFree(out);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
};

}  // namespace

double copy_bandwidth_bytes_per_s(std::size_t buffer_bytes, int repetitions) {
  if (buffer_bytes < sizeof(float4) || repetitions < 1) {
    throw CudaError("copy bandwidth needs at least 16 bytes and one repetition");
  }
  const std::size_t vectors = buffer_bytes / sizeof(float4);
  Buffers buffers(vectors * sizeof(float4));
  check(cudaMemset(buffers.in, 0, vectors * sizeof(float4)), "cudaMemset");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  const unsigned blocks = static_cast<unsigned>(sms) * 8;
  const auto* in = static_cast<const float4*>(buffers.in);
  auto* out = static_cast<float4*>(buffers.out);
  for (int i = 0; i < 2; ++i) copy_vectors<<<blocks, 512>>>(in, out, vectors);
  check(cudaGetLastError(), "copy_vectors");
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    EventPair events;
    check(cudaEventRecord(events.start), "cudaEventRecord");
    copy_vectors<<<blocks, 512>>>(in, out, vectors);
    check(cudaEventRecord(events.stop), "cudaEventRecord");
    seconds.push_back(events.seconds());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return 2.0 * static_cast<double>(vectors * sizeof(float4)) / seconds[seconds.size() / 2];
}

double back_to_back_kernel_seconds(int kernels) {
  if (kernels < 1) throw CudaError("kernel timing needs at least one kernel");
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32>>>();
  check(cudaGetLastError(), "empty_kernel");
  EventPair events;
  check(cudaEventRecord(events.start), "cudaEventRecord");
  for (int i = 0; i < kernels; ++i) empty_kernel<<<1, 32>>>();
  check(cudaEventRecord(events.stop), "cudaEventRecord");
  return events.seconds() / kernels;
}

}  // namespace megasim::backend::cuda
