// What the CUDA backend can see of the machine: the GPUs and the NCCL library. CUDA and NCCL status
// codes become exceptions here, at the edge of this folder (STYLE.md §10).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace megasim::backend::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GpuInfo {
  int ordinal = 0;
  std::string name;
  double memory_gbytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
};

// The visible GPUs; empty (not an error) when the driver reports none, as on a build machine.
std::vector<GpuInfo> visible_gpus();
// Makes GPU `ordinal` this thread's current device (cudaSetDevice); throws CudaError naming it.
void use_gpu(int ordinal);
// NCCL's version as "major.minor.patch" (from ncclGetVersion).
std::string nccl_version();

}  // namespace megasim::backend::cuda
