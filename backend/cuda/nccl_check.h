// NCCL status codes become CudaError at the edge of this folder (STYLE.md §10): the message names
// the call, NCCL's error string and, when the communicator is known, NCCL's last error text.
#pragma once

#include <nccl.h>

#include <string>

#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {

inline void check_nccl(ncclResult_t status, const std::string& what, ncclComm_t comm = nullptr) {
  if (status == ncclSuccess) return;
  std::string message = what + ": " + nccl().get_error_string(status);
  const char* last = nccl().get_last_error(comm);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  throw CudaError(message);
}

}  // namespace megasim::backend::cuda
