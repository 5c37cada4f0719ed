// The memory-bound ops of layer_ops.h (kElementwise, kNorm) on the GPU: a streaming bf16 kernel
// that reads and writes an op's bytes, y = kScale * x + kShift over n = max(1, bytes / 4) elements
// (2 bytes read and 2 written per element), 16-byte vectors, a grid-stride loop over at most
// eight blocks of 256 threads per SM. The time is that of moving the op's bytes, not of the op's
// own arithmetic (a LayerNorm's reductions, a GeLU's tanh), which the cost model does not count
// either (compute_cost.h: memory-bound ops are bytes / bandwidth).
//
// This header needs no CUDA header: streams are CUstream_st* (what cudaStream_t points to).
#pragma once

#include <cstddef>

struct CUstream_st;

namespace megasim::backend::cuda {

class StreamingKernel {
 public:
  static constexpr float kScale = 0.5f;
  static constexpr float kShift = 0.25f;

  // Allocates x and y on the current device for ops of up to `max_bytes`, x zero-filled (the time
  // of a streaming kernel does not depend on its data). Throws DeviceMemoryError
  // (device_memory.h) when the device lacks the bytes, CudaError on other failures.
  explicit StreamingKernel(double max_bytes);
  ~StreamingKernel();
  StreamingKernel(const StreamingKernel&) = delete;
  StreamingKernel& operator=(const StreamingKernel&) = delete;

  // Enqueues the kernel for an op moving `bytes` on `stream` (no synchronisation). Precondition
  // (asserted): bytes <= the constructor's max_bytes, finite and >= 0.
  void run(double bytes, CUstream_st* stream);

  // Elements of the kernel for an op moving `bytes`: max(1, floor(bytes / 4)).
  static std::size_t elements_for(double bytes);
  // Device bytes the buffers for ops of up to `max_bytes` take (x and y, each rounded up to whole
  // 16-byte vectors), without allocating.
  static std::size_t device_bytes_for(double max_bytes);

 private:
  void* x_ = nullptr;
  void* y_ = nullptr;
  std::size_t capacity_ = 0;  // elements of x and of y
  unsigned max_blocks_ = 1;
  void* memory_ = nullptr;  // one allocation holding x then y
};

}  // namespace megasim::backend::cuda
