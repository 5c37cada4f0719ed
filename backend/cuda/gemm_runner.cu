#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/gemm_runner.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kAlignment = 256;  // what cudaMalloc gives and cuBLASLt's heuristic assumes
constexpr std::uint32_t kSeedA = 0x9e3779b9u;
constexpr std::uint32_t kSeedB = 0x85ebca6bu;

// A value uniform in [-1, 1) from a counter hash of (index, seed).
__device__ float uniform_at(std::size_t i, std::uint32_t seed) {
  std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill_uniform(__nv_bfloat16* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    x[i] = __float2bfloat16(uniform_at(i, seed));
  }
}

__global__ void fill_uniform_e4m3(__nv_fp8_e4m3* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    x[i] = __nv_fp8_e4m3(uniform_at(i, seed));
  }
}

cudaDataType_t element_type(GemmOperands operands) {
  return operands == GemmOperands::kFp8E4m3 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
}

struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  Layout(std::int64_t rows, std::int64_t cols, std::int64_t batch, cudaDataType_t type) {
    check(cublaslt().matrix_layout_create(&handle, type, static_cast<std::uint64_t>(rows),
                                          static_cast<std::uint64_t>(cols), rows),
          "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(batch);
      const std::int64_t stride = rows * cols;
      cublasStatus_t status =
          cublaslt().matrix_layout_set_attribute(handle, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
      if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublaslt().matrix_layout_set_attribute(handle, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                        sizeof(stride));
      }
      if (status != CUBLAS_STATUS_SUCCESS) cublaslt().matrix_layout_destroy(handle);
      check(status, "cublasLtMatrixLayoutSetAttribute(batch)");
    }
  }
  ~Layout() { cublaslt().matrix_layout_destroy(handle); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

// One configured GEMM in the layout of gemm_runner.h: cuBLAS's M = n, N = m, A = W stored k×n and
// transposed, B = xᵀ stored k×m, D stored n×m.
class Matmul {
 public:
  Matmul(cublasLtHandle_t lt, const GemmProblem& p, void* workspace)
      : lt_(lt),
        workspace_(workspace),
        a_(p.k, p.n, p.batch, element_type(p.operands)),
        b_(p.k, p.m, p.batch, element_type(p.operands)),
        d_(p.n, p.m, p.batch, CUDA_R_16BF) {
    check(cublaslt().matmul_desc_create(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T;
    const std::size_t workspace_bytes = GemmRunner::kWorkspaceBytes;
    cublasLtMatmulPreference_t preference = nullptr;
    const char* failed = "cublasLtMatmulDescSetAttribute(TRANSA)";
    cublasStatus_t status =
        cublaslt().matmul_desc_set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose));
    if (status == CUBLAS_STATUS_SUCCESS) {
      failed = "cublasLtMatmulPreferenceCreate";
      status = cublaslt().preference_create(&preference);
    }
    if (status == CUBLAS_STATUS_SUCCESS) {
      failed = "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)";
      status = cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_bytes, sizeof(workspace_bytes));
    }
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
      failed = "cublasLtMatmulAlgoGetHeuristic";
      status = cublaslt().algo_get_heuristic(lt_, desc_, a_.handle, b_.handle, d_.handle, d_.handle, preference, 1,
                                             &heuristic_, &found);
    }
    if (preference != nullptr) cublaslt().preference_destroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) cublaslt().matmul_desc_destroy(desc_);
    check(status, failed);
    if (found == 0) {
      throw CudaError(std::string("cublasLtMatmulAlgoGetHeuristic: no ") +
                      (p.operands == GemmOperands::kFp8E4m3 ? "FP8 E4M3" : "bf16") + " algorithm for m=" +
                      std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k));
    }
  }
  ~Matmul() { cublaslt().matmul_desc_destroy(desc_); }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void run(const void* a, const void* b, void* d, cudaStream_t stream) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    check(cublaslt().matmul(lt_, desc_, &alpha, a, a_.handle, b, b_.handle, &beta, d, d_.handle, d, d_.handle,
                            &heuristic_.algo, workspace_, GemmRunner::kWorkspaceBytes, stream),
          "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t lt_;
  void* workspace_;
  Layout a_, b_, d_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

using Key = std::array<std::int64_t, 5>;

Key key_of(const GemmProblem& p) {
  return {p.m, p.n, p.k, p.batch, static_cast<std::int64_t>(p.operands)};
}

// Elements of each operand of one problem: A k×n, B k×m, D n×m, `batch` times.
struct OperandElements {
  std::size_t a = 0;
  std::size_t b = 0;
  std::size_t d = 0;
};

OperandElements elements_of(const GemmProblem& p) {
  const auto batch = static_cast<std::size_t>(p.batch);
  const auto m = static_cast<std::size_t>(p.m);
  const auto n = static_cast<std::size_t>(p.n);
  const auto k = static_cast<std::size_t>(p.k);
  return {k * n * batch, k * m * batch, n * m * batch};
}

OperandElements largest_operands(const std::vector<GemmProblem>& problems) {
  OperandElements largest;
  for (const GemmProblem& p : problems) {
    validate(p);
    const OperandElements e = elements_of(p);
    largest.a = std::max(largest.a, e.a);
    largest.b = std::max(largest.b, e.b);
    largest.d = std::max(largest.d, e.d);
  }
  return largest;
}

std::size_t region_bytes(std::size_t elements) {
  const std::size_t bytes = elements * sizeof(__nv_bfloat16);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

std::size_t operand_bytes(GemmOperands operands) {
  return operands == GemmOperands::kFp8E4m3 ? 1 : sizeof(__nv_bfloat16);
}

void validate(const GemmProblem& p) {
  const std::string shape = "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                            " batch=" + std::to_string(p.batch);
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1 || p.batch > std::numeric_limits<std::int32_t>::max()) {
    throw CudaError("GEMM problem needs m, n, k, batch >= 1 and batch < 2^31 (got " + shape + ")");
  }
  if (p.operands == GemmOperands::kFp8E4m3 && (p.m % 16 != 0 || p.n % 16 != 0 || p.k % 16 != 0)) {
    throw CudaError("an FP8 GEMM needs m, n and k multiples of 16 (cuBLASLt's rule; got " + shape + ")");
  }
}

void fill_uniform_bf16(void* device_data, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  if (count == 0) return;
  fill_uniform<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(device_data), count, seed);
  check(cudaGetLastError(), "fill_uniform");
}

void fill_uniform_fp8(void* device_data, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  if (count == 0) return;
  fill_uniform_e4m3<<<1024, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(device_data), count, seed);
  check(cudaGetLastError(), "fill_uniform_e4m3");
}

struct GemmRunner::State {
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
  DeviceBuffer arena;
  OperandElements capacity;  // of the arena's regions
  void* a = nullptr;
  void* b = nullptr;
  void* d = nullptr;
  std::map<Key, std::unique_ptr<Matmul>> matmuls;

  State() { check(cublaslt().create(&lt), "cublasLtCreate"); }
  ~State() {
    matmuls.clear();  // descriptors before the handle
    cublaslt().destroy(lt);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const Matmul& matmul(const GemmProblem& p) {
    const auto found = matmuls.find(key_of(p));
    if (found != matmuls.end()) return *found->second;
    validate(p);
    return *matmuls.emplace(key_of(p), std::make_unique<Matmul>(lt, p, workspace.get())).first->second;
  }
};

GemmRunner::GemmRunner(const std::vector<GemmProblem>& problems) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.capacity = largest_operands(problems);
  s.workspace = DeviceBuffer(kWorkspaceBytes, "cuBLASLt workspace");
  s.arena = DeviceBuffer(arena_bytes_for(problems), "GEMM operands");
  if (s.arena.get() != nullptr) {
    auto* base = static_cast<char*>(s.arena.get());
    s.a = base;
    s.b = base + region_bytes(s.capacity.a);
    s.d = base + region_bytes(s.capacity.a) + region_bytes(s.capacity.b);
    fill_uniform_bf16(s.a, s.capacity.a, kSeedA, nullptr);
    fill_uniform_bf16(s.b, s.capacity.b, kSeedB, nullptr);
    // The caller's streams may not synchronise with the default stream.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  for (const GemmProblem& p : problems) s.matmul(p);
}

GemmRunner::~GemmRunner() = default;

void GemmRunner::prepare(const GemmProblem& problem) {
  state_->matmul(problem);
}

void GemmRunner::run(const GemmProblem& problem, cudaStream_t stream) {
  State& s = *state_;
  validate(problem);
  MEGASIM_ASSERT(problem.operands == GemmOperands::kBf16, "an FP8 GEMM on the arena's bf16 operands");
  const OperandElements e = elements_of(problem);
  MEGASIM_ASSERT(e.a <= s.capacity.a && e.b <= s.capacity.b && e.d <= s.capacity.d,
                 "GEMM larger than the problems GemmRunner's arena was sized for");
  s.matmul(problem).run(s.a, s.b, s.d, stream);
}

void GemmRunner::run(const GemmProblem& problem, const void* a, const void* b, void* d, cudaStream_t stream) {
  state_->matmul(problem).run(a, b, d, stream);
}

std::size_t GemmRunner::arena_bytes_for(const std::vector<GemmProblem>& problems) {
  const OperandElements largest = largest_operands(problems);
  return region_bytes(largest.a) + region_bytes(largest.b) + region_bytes(largest.d);
}

std::size_t GemmRunner::arena_bytes() const {
  return state_->arena.bytes();
}

}  // namespace megasim::backend::cuda
