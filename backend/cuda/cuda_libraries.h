// The CUDA libraries the backend calls beyond the runtime (cuBLASLt, NCCL), opened with dlopen on
// first use. megasim then starts without loading them (about 760 MB of shared objects, some 75 ms
// per start) and a build with the CUDA backend still runs on a machine without them: only the
// commands that use the GPU need them. The CUDA runtime is linked statically and itself opens the
// driver on its first call.
#pragma once

#include <cublasLt.h>
#include <nccl.h>

namespace megasim::backend::cuda {

// The cuBLASLt entry points the GEMM probe uses.
struct CublasLtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) matrix_layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) matrix_layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) matrix_layout_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&cublasLtMatmul) matmul;
};

// The NCCL entry points the version query, the communicators (nccl_comms.h) and the rank executor use.
struct NcclApi {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetErrorString) get_error_string;
  decltype(&ncclGetLastError) get_last_error;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommSplit) comm_split;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclCommCount) comm_count;
  decltype(&ncclCommUserRank) comm_user_rank;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
};

// Opens the library (libcublasLt.so.<major>, libnccl.so.<major> of the headers built against) once
// and resolves every entry point; throws CudaError naming the library and what dlopen or dlsym said
// when that fails (the library is not installed or not on the loader's path).
const CublasLtApi& cublaslt();
const NcclApi& nccl();

}  // namespace megasim::backend::cuda
