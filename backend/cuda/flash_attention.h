// Fused attention on the GPU in the manner of FlashAttention-2 (Dao 2023, arXiv 2307.08691): the
// kernels the cuda backend runs for an attention core with plan.use_flash_attention.
//
// What is computed, per head h of batch_heads and with scale = 1/sqrt(head_dim):
//   forward:  O = softmax(scale·Q·Kᵀ + mask)·V, and the log-sum-exp of each row,
//             L[i] = log Σ_j exp(scale·q_i·k_j) over the keys j visible to query i (natural log);
//   backward: from Q, K, V, O, dO and L: D[i] = Σ_d dO[i][d]·O[i][d], P = exp(scale·Q·Kᵀ − L)
//             recomputed, dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P∘(dP − D), dQ = scale·dS·K,
//             dK = scale·dSᵀ·Q.
// Masks: key j is visible to query i iff (not causal or j <= i) and (window == 0 or j > i − window),
// i.e. causal (GPT) attention, optionally limited to a sliding window of `window` keys ending at the
// query's own position (a window needs causal; a window >= seq is no limit). Every query sees at
// least one key (itself, when causal).
// Layout: Q, K, V, O, dO, dQ, dK, dV are bf16 [batch_heads][seq][head_dim], contiguous; L is fp32
// [batch_heads][seq]. head_dim is 64 or 128; seq is any positive length (the last tile is ragged).
// Device pointers are the caller's, 16-byte aligned (cudaMalloc gives 256).
// Numerics: bf16 tensor-core products (mma.sync m16n8k16) with fp32 accumulation; the softmax
// statistics (row max, row sum, L), D and dS in fp32; P and dS are rounded to bf16 as the operands
// of the products that follow them, as in FlashAttention-2. The forward is deterministic (bit-equal
// results for equal inputs). The backward accumulates dQ in fp32 with atomic adds from every key
// tile, so dQ can differ in its last bits from run to run; dK and dV are deterministic.
// Work: the kernels visit, per head, only the tiles that the masks leave at least one visible pair
// in, and do the full tensor-core work of each tile they visit (masked elements are zeroed, not
// skipped). The tiles: forward 64 queries × 64 keys; backward 64 keys × 64 queries (head_dim 64)
// or 64 keys × 32 queries (head_dim 128). flash_attention_flops counts exactly that work.
// Kernels: forward one launch; backward three (the D pre-pass that also zeroes the fp32 dQ
// accumulator, the main kernel, the dQ conversion), all on the caller's stream.
// Approximated: no dropout and no attention bias; one head per K and V head (no grouped queries);
// queries and keys have the same length.
//
// This header needs no CUDA header: streams are CUstream_st* (what cudaStream_t points to).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct CUstream_st;

namespace megasim::backend::cuda {

struct FlashAttentionProblem {
  std::int64_t batch_heads = 1;  // micro-batch × heads on this GPU
  std::int64_t seq = 1;          // queries = keys
  std::int64_t head_dim = 128;   // 64 or 128
  bool causal = true;
  std::int64_t window = 0;  // sliding window in keys, 0: none (needs causal)
};

// Throws CudaError naming the field and what would be valid unless batch_heads >= 1,
// 1 <= seq <= 2^30, batch_heads·seq < 2^31, head_dim is 64 or 128, window >= 0, and window == 0 or causal.
void validate(const FlashAttentionProblem& problem);

// 1/sqrt(head_dim).
float softmax_scale(const FlashAttentionProblem& problem);

// Matmul FLOPs the kernels execute (2 per multiply-add) over the tiles they visit (see the top of
// this file): forward 2 products per tile (Q·Kᵀ, P·V), backward 5 (Q·Kᵀ recomputed, dO·Vᵀ, Pᵀ·dO,
// dSᵀ·Q, dS·K), each a full tile of head_dim. The FlashAttention-2 benchmark's count
// (models::attention_forward_flops, over the visible (q, k) pairs alone) is lower by the masked
// part of the diagonal tiles and the ragged last tile. Throws as validate does.
struct FlashAttentionFlops {
  double forward = 0;
  double backward = 0;
};
FlashAttentionFlops flash_attention_flops(const FlashAttentionProblem& problem);

// Device tensors of the forward, in the layout above.
struct FlashAttentionForwardArgs {
  const void* q = nullptr;  // bf16
  const void* k = nullptr;  // bf16
  const void* v = nullptr;  // bf16
  void* o = nullptr;        // bf16, written
  float* lse = nullptr;     // fp32 L, written
};

// Device tensors of the backward. q, k, v, o and lse as the forward read and wrote them.
struct FlashAttentionBackwardArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* o = nullptr;
  const void* d_o = nullptr;  // bf16 gradient of O
  const float* lse = nullptr;
  void* dq = nullptr;  // bf16, written
  void* dk = nullptr;  // bf16, written
  void* dv = nullptr;  // bf16, written
  // flash_attention_backward_workspace_bytes(problem) bytes of scratch (D and the fp32 dQ).
  void* workspace = nullptr;
};

// Bytes of the backward's workspace: D (fp32 per row) and the fp32 dQ accumulator, each rounded up
// to 256 bytes. Throws as validate does.
std::size_t flash_attention_backward_workspace_bytes(const FlashAttentionProblem& problem);

// Enqueue the kernels on `stream` (nullptr: the default stream) on the current device, without
// synchronising. Throw CudaError for an invalid problem, a null or misaligned pointer (checked
// before any CUDA call) or a failed launch.
void flash_attention_forward(const FlashAttentionProblem& problem, const FlashAttentionForwardArgs& args,
                             CUstream_st* stream);
void flash_attention_backward(const FlashAttentionProblem& problem, const FlashAttentionBackwardArgs& args,
                              CUstream_st* stream);

// Host copies of one problem's tensors in the layout above, fp32 (the bf16 values widened).
struct FlashAttentionHostTensors {
  std::vector<float> q, k, v, o, d_o, lse, dq, dk, dv;
};

// Runs the forward and backward of attention shapes on data it owns, for the shard runner: one
// arena holds every tensor and the workspace of the largest of its problems, Q, K, V, O and dO
// filled with fill_uniform_bf16 (gemm_runner.h) and L zeroed, so that any of its problems runs in
// any order without the caller managing buffers (the backward reads whatever O and L the latest
// forward left, finite values either way). Inputs can be replaced and results read back, to check
// the kernels against a host reference.
class FlashAttentionRunner {
 public:
  // Validates every problem and allocates the arena on the current device (none when `problems` is
  // empty). Throws CudaError for an invalid problem or a CUDA failure, DeviceMemoryError
  // (device_memory.h) when the device lacks the arena.
  explicit FlashAttentionRunner(const std::vector<FlashAttentionProblem>& problems);
  ~FlashAttentionRunner();
  FlashAttentionRunner(const FlashAttentionRunner&) = delete;
  FlashAttentionRunner& operator=(const FlashAttentionRunner&) = delete;

  // Enqueue one forward or backward of `problem` on the arena (no synchronisation). Throws CudaError
  // for an invalid problem or a failed launch. Precondition (asserted): the problem fits the arena,
  // as every problem given at construction does.
  void forward(const FlashAttentionProblem& problem, CUstream_st* stream);
  void backward(const FlashAttentionProblem& problem, CUstream_st* stream);

  // Copies q, k, v and d_o of `inputs`, rounded to bf16, into the arena as `problem`'s inputs, and
  // waits for the copies. Preconditions (asserted): the problem fits the arena, and each of the four
  // has batch_heads·seq·head_dim values.
  void upload_inputs(const FlashAttentionProblem& problem, const FlashAttentionHostTensors& inputs);
  // Waits for the whole device, then copies every tensor of `problem` from the arena (what the
  // latest forward and backward wrote). Precondition (asserted): the problem fits the arena.
  [[nodiscard]] FlashAttentionHostTensors download(const FlashAttentionProblem& problem) const;

  // Bytes of the arena for `problems` (or one problem), without allocating: eight tensors of the
  // largest batch_heads·seq·head_dim (Q, K, V, O, dO, dQ, dK, dV in bf16), L, and the largest
  // backward workspace, each region rounded up to 256 bytes. Throws as validate does.
  static std::size_t arena_bytes_for(const std::vector<FlashAttentionProblem>& problems);
  static std::size_t arena_bytes_for(const FlashAttentionProblem& problem);
  [[nodiscard]] std::size_t arena_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace megasim::backend::cuda
