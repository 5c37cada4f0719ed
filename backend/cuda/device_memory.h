// Device memory that frees itself, and the error for a device that lacks the bytes: a plan whose
// shard does not fit is the user's to fix (a larger split, a smaller micro-batch), so its caller
// turns DeviceMemoryError into a sim::ConfigError naming the bytes, while any other CUDA failure
// stays a CudaError. Private to this folder's sources (it includes the CUDA runtime's header).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {

class DeviceMemoryError : public CudaError {
 public:
  DeviceMemoryError(std::size_t bytes, const std::string& what)
      : CudaError(what + ": cannot allocate " + std::to_string(bytes) + " bytes of device memory"), bytes_(bytes) {}
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
};

// One cudaMalloc on the current device (none for 0 bytes), freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws DeviceMemoryError when the device lacks the bytes, CudaError on any other failure;
  // `what` names the buffer in the message.
  DeviceBuffer(std::size_t bytes, const char* what) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t status = cudaMalloc(&ptr_, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not a sticky error: clear it so that later calls do not report it
      ptr_ = nullptr;
      throw DeviceMemoryError(bytes, std::string("cudaMalloc(") + what + ")");
    }
    check(status, what);
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  // Hands the memory to the caller, who then frees it with cudaFree.
  [[nodiscard]] void* release() {
    bytes_ = 0;
    return std::exchange(ptr_, nullptr);
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace megasim::backend::cuda
