// bf16 GEMMs of many shapes through cuBLASLt, each configured once: the matmul descriptor, the
// operand layouts and the heuristic's algorithm are cached per (m, n, k, batch), so running a GEMM
// is one cublasLtMatmul call on the caller's stream (no allocation, no synchronisation). What the
// GEMM probe times and what the shard runner plays a plan's GEMMs with.
//
// Layout: PyTorch's F.linear(x, W), as Megatron-LM's GEMMs reach cuBLASLt: row-major C[m×n] =
// x[m×k]·Wᵀ with W stored n×k is, column-major, Cᵀ[n×m] = op(W)·xᵀ: cuBLAS's M = n, N = m, A = W
// stored k×n and transposed (the TN layout), B = xᵀ stored k×m, D = Cᵀ stored n×m; `batch`
// products strided by one operand each. bf16 operands and output, fp32 accumulation (compute type
// CUBLAS_COMPUTE_32F), the first algorithm of cuBLASLt's heuristic for a 32 MiB workspace (what
// PyTorch gives cuBLASLt on Hopper).
//
// This header needs no CUDA header: streams are CUstream_st* (what cudaStream_t points to).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct CUstream_st;

namespace megasim::backend::cuda {

// The operands' element type: bf16 (Megatron-LM's GEMMs), or FP8 E4M3 (Transformer Engine's
// forward GEMMs on Hopper, unit scales). The output is bf16 and the accumulation fp32 either way.
// cuBLASLt's FP8 GEMMs need the TN layout (this one), compute capability 8.9 or more and every side
// a multiple of 16.
enum class GemmOperands : std::uint8_t { kBf16, kFp8E4m3 };
std::size_t operand_bytes(GemmOperands operands);  // 2 or 1

// C[m×n] = A[m×k]·B[k×n], `batch` independent products in one strided-batched call.
struct GemmProblem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  GemmOperands operands = GemmOperands::kBf16;
};

// Throws CudaError unless m, n, k >= 1 and 1 <= batch <= 2^31 - 1 (cuBLASLt's batch count is int32),
// and for FP8 operands m, n and k are multiples of 16.
void validate(const GemmProblem& problem);

// Fills `count` bf16 values at `device_data` with values uniform in [-1, 1) from a counter hash of
// (index, seed): random operands without a host copy. Enqueued on `stream` (nullptr: the default
// stream); throws CudaError when the launch fails.
void fill_uniform_bf16(void* device_data, std::size_t count, std::uint32_t seed, CUstream_st* stream);
// The same in FP8 E4M3 (each value the E4M3 nearest the uniform draw).
void fill_uniform_fp8(void* device_data, std::size_t count, std::uint32_t seed, CUstream_st* stream);

class GemmRunner {
 public:
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  // Creates the cuBLASLt handle and the workspace on the current device, configures every problem
  // of `problems`, and allocates one operand arena whose A, B and D regions each hold the largest
  // operand of any of them (none when `problems` is empty), A and B filled with fill_uniform_bf16.
  // Throws CudaError for an invalid problem or a CUDA/cuBLASLt failure, DeviceMemoryError
  // (device_memory.h) when the device lacks the workspace or the arena.
  explicit GemmRunner(const std::vector<GemmProblem>& problems = {});
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Configures `problem` now if it is not yet (a host-side heuristic query), so that a later run()
  // does no setup. Throws CudaError when the problem is invalid or cuBLASLt has no algorithm for it.
  void prepare(const GemmProblem& problem);

  // Enqueues the GEMM on the arena's operands (D overwritten). Preconditions (asserted): bf16
  // operands (the arena holds bf16 values), and each operand fits its arena region, as it does for
  // every problem given at construction.
  void run(const GemmProblem& problem, CUstream_st* stream);
  // Enqueues the GEMM on the caller's device operands, column-major and batch-strided as described
  // above: A k×n, B k×m, D n×m per product.
  void run(const GemmProblem& problem, const void* a, const void* b, void* d, CUstream_st* stream);

  // Bytes of the arena for `problems` (each region rounded up to 256 bytes), without allocating.
  static std::size_t arena_bytes_for(const std::vector<GemmProblem>& problems);
  [[nodiscard]] std::size_t arena_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace megasim::backend::cuda
