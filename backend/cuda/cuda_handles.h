// CUDA streams and events that free themselves, for this folder's runners. Private to this folder's
// sources (it includes the CUDA runtime's header).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "sim/time.h"

namespace megasim::backend::cuda {

// A non-blocking stream (no implicit synchronisation with the legacy default stream).
class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Timing events, created once and recorded again every iteration.
class Events {
 public:
  explicit Events(std::size_t count) {
    events_.reserve(count);
    try {
      for (std::size_t i = 0; i < count; ++i) {
        cudaEvent_t event = nullptr;
        check(cudaEventCreate(&event), "cudaEventCreate");
        events_.push_back(event);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Events() { destroy(); }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  [[nodiscard]] cudaEvent_t operator[](std::size_t i) const { return events_[i]; }
  [[nodiscard]] std::size_t size() const { return events_.size(); }

 private:
  void destroy() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    events_.clear();
  }
  std::vector<cudaEvent_t> events_;
};

// Nanoseconds from `from` to `to`, both complete (cudaEventElapsedTime: 0.5 µs resolution).
inline sim::SimTime elapsed_ns(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return std::llround(static_cast<double>(ms) * 1e6);
}

}  // namespace megasim::backend::cuda
