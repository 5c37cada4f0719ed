#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {

std::vector<GpuInfo> visible_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // No driver or no device is the normal state of a build machine, not an error.
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) return {};
  check(status, "cudaGetDeviceCount");
  std::vector<GpuInfo> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties");
    out.push_back(GpuInfo{i, prop.name, static_cast<double>(prop.totalGlobalMem) / 1e9, prop.major, prop.minor,
                          prop.multiProcessorCount});
  }
  return out;
}

void use_gpu(int ordinal) {
  check(cudaSetDevice(ordinal), ("cudaSetDevice(" + std::to_string(ordinal) + ")").c_str());
}

std::string nccl_version() {
  int version = 0;
  if (nccl().get_version(&version) != ncclSuccess) throw CudaError("ncclGetVersion failed");
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace megasim::backend::cuda
