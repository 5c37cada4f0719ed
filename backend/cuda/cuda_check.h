// CUDA and cuBLAS status codes become CudaError exceptions at the edge of this folder (STYLE.md
// §10): every check names the call that failed.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
  }
}

}  // namespace megasim::backend::cuda
