#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/gemm_probe.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // what PyTorch gives cuBLASLt on Hopper
constexpr int kWarmups = 3;
// Idle time before each measurement: under sustained GEMM load an H200 holds its 700 W limit by
// lowering its clock, so without a pause a shape measured after a large one would run slower than
// the same shape measured first.
constexpr auto kSettle = std::chrono::milliseconds(100);

// Uniform values in [-1, 1) from a counter hash, so operands are random without a host copy.
__global__ void fill_uniform(__nv_bfloat16* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    x[i] = __float2bfloat16(static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

// Device buffers of one problem, freed on every path.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&ptr, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  __nv_bfloat16* bf16() const { return static_cast<__nv_bfloat16*>(ptr); }
};

struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  Layout(std::int64_t rows, std::int64_t cols, std::int64_t batch) {
    check(cublaslt().matrix_layout_create(&handle, CUDA_R_16BF, rows, cols, rows), "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(batch);
      const std::int64_t stride = rows * cols;
      check(cublaslt().matrix_layout_set_attribute(handle, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      check(cublaslt().matrix_layout_set_attribute(handle, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                   sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  }
  ~Layout() { cublaslt().matrix_layout_destroy(handle); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};

// One configured GEMM as PyTorch's F.linear(x, W) hands it to cuBLAS: row-major C[m×n] = x[m×k]·Wᵀ
// with W stored n×k is, column-major, Cᵀ[n×m] = op(W)·xᵀ: cuBLAS's M = n, N = m, A = W stored k×n and
// transposed (the TN layout), B = xᵀ stored k×m.
class Matmul {
 public:
  Matmul(cublasLtHandle_t lt, const GemmProblem& p, void* workspace)
      : lt_(lt), workspace_(workspace), a_(p.k, p.n, p.batch), b_(p.k, p.m, p.batch), d_(p.n, p.m, p.batch) {
    check(cublaslt().matmul_desc_create(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T;
    check(cublaslt().matmul_desc_set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)),
          "cublasLtMatmulDescSetAttribute(TRANSA)");
    cublasLtMatmulPreference_t preference = nullptr;
    check(cublaslt().preference_create(&preference), "cublasLtMatmulPreferenceCreate");
    const std::size_t workspace_bytes = kWorkspaceBytes;
    cublasStatus_t status = cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                &workspace_bytes, sizeof(workspace_bytes));
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublaslt().algo_get_heuristic(lt_, desc_, a_.handle, b_.handle, d_.handle, d_.handle, preference, 1,
                                             &heuristic_, &found);
    }
    cublaslt().preference_destroy(preference);
    check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      cublaslt().matmul_desc_destroy(desc_);
      throw CudaError("cublasLtMatmulAlgoGetHeuristic: no bf16 algorithm for m=" + std::to_string(p.m) +
                      " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k));
    }
  }
  ~Matmul() { cublaslt().matmul_desc_destroy(desc_); }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void run(const void* a, const void* b, void* d, cudaStream_t stream) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    check(cublaslt().matmul(lt_, desc_, &alpha, a, a_.handle, b, b_.handle, &beta, d, d_.handle, d, d_.handle,
                            &heuristic_.algo, workspace_, kWorkspaceBytes, stream),
          "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t lt_;
  void* workspace_;
  Layout a_, b_, d_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

std::size_t elements(std::int64_t rows, std::int64_t cols, std::int64_t batch) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * static_cast<std::size_t>(batch);
}

void require_valid(const GemmProblem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1) {
    throw CudaError("GEMM problem needs m, n, k, batch >= 1 (got m=" + std::to_string(p.m) + " n=" +
                    std::to_string(p.n) + " k=" + std::to_string(p.k) + " batch=" + std::to_string(p.batch) + ")");
  }
}

}  // namespace

struct GemmProbe::State {
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
};

GemmProbe::GemmProbe() : state_(std::make_unique<State>()) {
  check(cublaslt().create(&state_->lt), "cublasLtCreate");
  check(cudaMalloc(&state_->workspace, kWorkspaceBytes), "cudaMalloc(workspace)");
  check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

GemmProbe::~GemmProbe() {
  cudaStreamDestroy(state_->stream);
  cudaFree(state_->workspace);
  cublaslt().destroy(state_->lt);
}

double GemmProbe::median_seconds(const GemmProblem& p, int repetitions) {
  require_valid(p);
  if (repetitions < 1) throw CudaError("GEMM timing needs at least one repetition");
  const std::size_t a_count = elements(p.k, p.n, p.batch);
  const std::size_t b_count = elements(p.k, p.m, p.batch);
  DeviceBuffer a(a_count * sizeof(__nv_bfloat16));
  DeviceBuffer b(b_count * sizeof(__nv_bfloat16));
  DeviceBuffer d(elements(p.n, p.m, p.batch) * sizeof(__nv_bfloat16));
  fill_uniform<<<1024, 256, 0, state_->stream>>>(a.bf16(), a_count, 0x9e3779b9u);
  fill_uniform<<<1024, 256, 0, state_->stream>>>(b.bf16(), b_count, 0x85ebca6bu);
  check(cudaGetLastError(), "fill_uniform");
  const Matmul matmul(state_->lt, p, state_->workspace);
  check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
  std::this_thread::sleep_for(kSettle);
  for (int i = 0; i < kWarmups; ++i) matmul.run(a.ptr, b.ptr, d.ptr, state_->stream);

  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(repetitions));
  for (cudaEvent_t& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  std::vector<double> seconds;
  try {
    for (int i = 0; i < repetitions; ++i) {
      check(cudaEventRecord(events[2 * i], state_->stream), "cudaEventRecord");
      matmul.run(a.ptr, b.ptr, d.ptr, state_->stream);
      check(cudaEventRecord(events[2 * i + 1], state_->stream), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
    for (int i = 0; i < repetitions; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
      seconds.push_back(ms * 1e-3);
    }
  } catch (...) {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

double GemmProbe::max_relative_error(const GemmProblem& p) {
  require_valid(p);
  // Operands in {-2, ..., 2}: exact in bf16, and every partial sum is an integer exact in fp32.
  const std::size_t a_count = elements(p.k, p.n, p.batch);
  const std::size_t b_count = elements(p.k, p.m, p.batch);
  const std::size_t d_count = elements(p.n, p.m, p.batch);
  std::vector<__nv_bfloat16> a_host(a_count), b_host(b_count), d_host(d_count);
  std::vector<float> a_value(a_count), b_value(b_count);
  for (std::size_t i = 0; i < a_count; ++i) a_value[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 5) - 2);
  for (std::size_t i = 0; i < b_count; ++i) b_value[i] = static_cast<float>(static_cast<int>((i * 11 + 1) % 5) - 2);
  for (std::size_t i = 0; i < a_count; ++i) a_host[i] = __float2bfloat16(a_value[i]);
  for (std::size_t i = 0; i < b_count; ++i) b_host[i] = __float2bfloat16(b_value[i]);
  DeviceBuffer a(a_count * sizeof(__nv_bfloat16));
  DeviceBuffer b(b_count * sizeof(__nv_bfloat16));
  DeviceBuffer d(d_count * sizeof(__nv_bfloat16));
  check(cudaMemcpy(a.ptr, a_host.data(), a_count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(b.ptr, b_host.data(), b_count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), "cudaMemcpy");
  const Matmul matmul(state_->lt, p, state_->workspace);
  matmul.run(a.ptr, b.ptr, d.ptr, state_->stream);
  check(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
  check(cudaMemcpy(d_host.data(), d.ptr, d_count * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost), "cudaMemcpy");

  // Column-major: A(kk, i) at kk + i·k for i < n, B(kk, j) at kk + j·k for j < m, D(i, j) at i + j·n,
  // per batch.
  double worst = 0;
  for (std::int64_t g = 0; g < p.batch; ++g) {
    const float* ag = a_value.data() + g * p.k * p.n;
    const float* bg = b_value.data() + g * p.k * p.m;
    for (std::int64_t j = 0; j < p.m; ++j) {
      for (std::int64_t i = 0; i < p.n; ++i) {
        double reference = 0;
        for (std::int64_t kk = 0; kk < p.k; ++kk) reference += double{ag[kk + i * p.k]} * bg[kk + j * p.k];
        const double got = __bfloat162float(d_host[static_cast<std::size_t>(g * p.m * p.n + i + j * p.n)]);
        worst = std::max(worst, std::abs(got - reference) / std::max(1.0, std::abs(reference)));
      }
    }
  }
  return worst;
}

}  // namespace megasim::backend::cuda
