#include "backend/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include <string>

#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {
namespace {

void* open_library(const std::string& name) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw CudaError("cannot open " + name + " (" + (why != nullptr ? why : "unknown reason") +
                    "); install it or add its folder to LD_LIBRARY_PATH");
  }
  return handle;
}

template <typename Function>
void resolve(void* library, const std::string& library_name, const char* symbol, Function& out) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) throw CudaError(library_name + " has no " + symbol);
  out = reinterpret_cast<Function>(address);
}

CublasLtApi load_cublaslt() {
  const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = open_library(name);
  CublasLtApi api{};
  resolve(lib, name, "cublasLtCreate", api.create);
  resolve(lib, name, "cublasLtDestroy", api.destroy);
  resolve(lib, name, "cublasLtMatmulDescCreate", api.matmul_desc_create);
  resolve(lib, name, "cublasLtMatmulDescDestroy", api.matmul_desc_destroy);
  resolve(lib, name, "cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute);
  resolve(lib, name, "cublasLtMatrixLayoutCreate", api.matrix_layout_create);
  resolve(lib, name, "cublasLtMatrixLayoutDestroy", api.matrix_layout_destroy);
  resolve(lib, name, "cublasLtMatrixLayoutSetAttribute", api.matrix_layout_set_attribute);
  resolve(lib, name, "cublasLtMatmulPreferenceCreate", api.preference_create);
  resolve(lib, name, "cublasLtMatmulPreferenceDestroy", api.preference_destroy);
  resolve(lib, name, "cublasLtMatmulPreferenceSetAttribute", api.preference_set_attribute);
  resolve(lib, name, "cublasLtMatmulAlgoGetHeuristic", api.algo_get_heuristic);
  resolve(lib, name, "cublasLtMatmul", api.matmul);
  return api;
}

NcclApi load_nccl() {
  const std::string name = "libnccl.so." + std::to_string(NCCL_MAJOR);
  void* lib = open_library(name);
  NcclApi api{};
  resolve(lib, name, "ncclGetVersion", api.get_version);
  resolve(lib, name, "ncclGetErrorString", api.get_error_string);
  resolve(lib, name, "ncclGetLastError", api.get_last_error);
  resolve(lib, name, "ncclGetUniqueId", api.get_unique_id);
  resolve(lib, name, "ncclCommInitRank", api.comm_init_rank);
  resolve(lib, name, "ncclCommSplit", api.comm_split);
  resolve(lib, name, "ncclCommDestroy", api.comm_destroy);
  resolve(lib, name, "ncclCommAbort", api.comm_abort);
  resolve(lib, name, "ncclCommGetAsyncError", api.comm_get_async_error);
  resolve(lib, name, "ncclCommCount", api.comm_count);
  resolve(lib, name, "ncclCommUserRank", api.comm_user_rank);
  resolve(lib, name, "ncclAllReduce", api.all_reduce);
  resolve(lib, name, "ncclReduceScatter", api.reduce_scatter);
  resolve(lib, name, "ncclAllGather", api.all_gather);
  resolve(lib, name, "ncclSend", api.send);
  resolve(lib, name, "ncclRecv", api.recv);
  resolve(lib, name, "ncclGroupStart", api.group_start);
  resolve(lib, name, "ncclGroupEnd", api.group_end);
  return api;
}

}  // namespace

// Function-local statics: loaded once, thread-safely; a failed load throws again on the next call.
const CublasLtApi& cublaslt() {
  static const CublasLtApi api = load_cublaslt();
  return api;
}

const NcclApi& nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

}  // namespace megasim::backend::cuda
