// Host side of flash_attention.h: validation, the FLOP count, the launch wrappers and the runner
// with its synthetic arena. The kernels are in flash_attention_forward.cu and
// flash_attention_backward.cu.
#include "backend/cuda/flash_attention.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/flash_attention_device.h"
#include "backend/cuda/gemm_runner.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kAlignment = 256;  // of every arena and workspace region
constexpr std::uintptr_t kTensorAlignment = 16;
// Positions are int32 in the kernels, with room for a tile and a window past the end.
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 30;
constexpr std::uint32_t kSeeds[] = {0x2545f491u, 0x9e3779b9u, 0x85ebca6bu, 0xc2b2ae35u, 0x27d4eb2fu};

std::size_t round_up(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

std::string describe(const FlashAttentionProblem& p) {
  return "batch_heads=" + std::to_string(p.batch_heads) + " seq=" + std::to_string(p.seq) +
         " head_dim=" + std::to_string(p.head_dim) + " causal=" + (p.causal ? "true" : "false") +
         " window=" + std::to_string(p.window);
}

flash::Mask mask_of(const FlashAttentionProblem& p) {
  flash::Mask mask;
  mask.seq = static_cast<int>(p.seq);
  mask.causal = p.causal;
  mask.window = p.window >= p.seq ? 0 : static_cast<int>(p.window);  // a window of seq or more is no limit
  return mask;
}

int tiles(std::int64_t length, int tile) {
  return static_cast<int>((length + tile - 1) / tile);
}

std::size_t tensor_elements(const FlashAttentionProblem& p) {
  return static_cast<std::size_t>(p.batch_heads) * static_cast<std::size_t>(p.seq) *
         static_cast<std::size_t>(p.head_dim);
}

std::size_t rows(const FlashAttentionProblem& p) {
  return static_cast<std::size_t>(p.batch_heads) * static_cast<std::size_t>(p.seq);
}

// Throws unless `pointer` is set and aligned to `alignment` bytes.
void require_pointer(const void* pointer, const char* name, std::uintptr_t alignment, const char* call) {
  if (pointer == nullptr) throw CudaError(std::string(call) + ": " + name + " is null");
  if (reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0) {
    throw CudaError(std::string(call) + ": " + name + " is not " + std::to_string(alignment) + "-byte aligned");
  }
}

}  // namespace

void validate(const FlashAttentionProblem& p) {
  const std::string where = "FlashAttention problem (" + describe(p) + "): ";
  if (p.batch_heads < 1 || p.seq < 1 || p.seq > kMaxSeq ||
      p.batch_heads > std::numeric_limits<std::int32_t>::max() / p.seq) {
    throw CudaError(where + "needs batch_heads >= 1 and 1 <= seq <= 2^30 with batch_heads·seq < 2^31");
  }
  if (p.head_dim != 64 && p.head_dim != 128) {
    throw CudaError(where + "head_dim " + std::to_string(p.head_dim) + " is not supported: head_dim must be 64 or 128");
  }
  if (p.window < 0) throw CudaError(where + "window must be >= 0 (0: no sliding window)");
  if (p.window > 0 && !p.causal) {
    throw CudaError(where +
                    "a sliding window needs causal = true (key j is visible to query i iff i - window < j <= i)");
  }
}

float softmax_scale(const FlashAttentionProblem& p) {
  return 1.0f / std::sqrt(static_cast<float>(p.head_dim));
}

FlashAttentionFlops flash_attention_flops(const FlashAttentionProblem& p) {
  validate(p);
  const flash::Mask mask = mask_of(p);
  double forward_tiles = 0;
  for (int tile = 0; tile < tiles(p.seq, flash::kForwardQueryTile); ++tile) {
    const flash::TileRange keys = flash::forward_key_tiles(mask, tile);
    forward_tiles += keys.end - keys.first;
  }
  const int backward_queries = flash::backward_query_tile(static_cast<int>(p.head_dim));
  double backward_tiles = 0;
  for (int tile = 0; tile < tiles(p.seq, flash::kKeyTile); ++tile) {
    const flash::TileRange queries = flash::backward_query_tiles(mask, tile, backward_queries);
    backward_tiles += queries.end - queries.first;
  }
  const auto heads = static_cast<double>(p.batch_heads);
  const auto dim = static_cast<double>(p.head_dim);
  const double forward_product = 2.0 * flash::kForwardQueryTile * flash::kKeyTile * dim;
  const double backward_product = 2.0 * backward_queries * flash::kKeyTile * dim;
  return {heads * forward_tiles * 2 * forward_product, heads * backward_tiles * 5 * backward_product};
}

std::size_t flash_attention_backward_workspace_bytes(const FlashAttentionProblem& p) {
  validate(p);
  return round_up(rows(p) * sizeof(float)) + round_up(tensor_elements(p) * sizeof(float));
}

void flash_attention_forward(const FlashAttentionProblem& problem, const FlashAttentionForwardArgs& args,
                             cudaStream_t stream) {
  validate(problem);
  const char* call = "flash_attention_forward";
  require_pointer(args.q, "q", kTensorAlignment, call);
  require_pointer(args.k, "k", kTensorAlignment, call);
  require_pointer(args.v, "v", kTensorAlignment, call);
  require_pointer(args.o, "o", kTensorAlignment, call);
  require_pointer(args.lse, "lse", alignof(float), call);
  flash::ForwardParams params;
  params.q = static_cast<const __nv_bfloat16*>(args.q);
  params.k = static_cast<const __nv_bfloat16*>(args.k);
  params.v = static_cast<const __nv_bfloat16*>(args.v);
  params.o = static_cast<__nv_bfloat16*>(args.o);
  params.lse = args.lse;
  params.mask = mask_of(problem);
  params.query_tiles = tiles(problem.seq, flash::kForwardQueryTile);
  params.scale = softmax_scale(problem);
  flash::launch_forward(params, problem.batch_heads, static_cast<int>(problem.head_dim), stream);
}

void flash_attention_backward(const FlashAttentionProblem& problem, const FlashAttentionBackwardArgs& args,
                              cudaStream_t stream) {
  validate(problem);
  const char* call = "flash_attention_backward";
  require_pointer(args.q, "q", kTensorAlignment, call);
  require_pointer(args.k, "k", kTensorAlignment, call);
  require_pointer(args.v, "v", kTensorAlignment, call);
  require_pointer(args.o, "o", kTensorAlignment, call);
  require_pointer(args.d_o, "d_o", kTensorAlignment, call);
  require_pointer(args.lse, "lse", alignof(float), call);
  require_pointer(args.dq, "dq", kTensorAlignment, call);
  require_pointer(args.dk, "dk", kTensorAlignment, call);
  require_pointer(args.dv, "dv", kTensorAlignment, call);
  require_pointer(args.workspace, "workspace", kTensorAlignment, call);
  flash::BackwardParams params;
  params.q = static_cast<const __nv_bfloat16*>(args.q);
  params.k = static_cast<const __nv_bfloat16*>(args.k);
  params.v = static_cast<const __nv_bfloat16*>(args.v);
  params.o = static_cast<const __nv_bfloat16*>(args.o);
  params.d_o = static_cast<const __nv_bfloat16*>(args.d_o);
  params.lse = args.lse;
  params.dq = static_cast<__nv_bfloat16*>(args.dq);
  params.dk = static_cast<__nv_bfloat16*>(args.dk);
  params.dv = static_cast<__nv_bfloat16*>(args.dv);
  params.d = static_cast<float*>(args.workspace);
  params.dq_accum =
      reinterpret_cast<float*>(static_cast<char*>(args.workspace) + round_up(rows(problem) * sizeof(float)));
  params.mask = mask_of(problem);
  params.key_tiles = tiles(problem.seq, flash::kKeyTile);
  params.rows = problem.batch_heads * problem.seq;
  params.scale = softmax_scale(problem);
  flash::launch_backward(params, problem.batch_heads, static_cast<int>(problem.head_dim), stream);
}

// The arena: eight bf16 tensor regions, L, then the workspace.
struct FlashAttentionRunner::State {
  std::size_t tensor_capacity = 0;     // elements per tensor region
  std::size_t row_capacity = 0;        // floats of L
  std::size_t workspace_capacity = 0;  // bytes
  DeviceBuffer arena;
  void* tensors[8] = {};  // q, k, v, o, d_o, dq, dk, dv
  float* lse = nullptr;
  void* workspace = nullptr;

  [[nodiscard]] bool fits(const FlashAttentionProblem& p) const {
    return tensor_elements(p) <= tensor_capacity && rows(p) <= row_capacity &&
           flash_attention_backward_workspace_bytes(p) <= workspace_capacity;
  }
};

namespace {

struct Capacity {
  std::size_t tensor = 0;
  std::size_t rows = 0;
  std::size_t workspace = 0;
};

Capacity capacity_for(const std::vector<FlashAttentionProblem>& problems) {
  Capacity c;
  for (const FlashAttentionProblem& p : problems) {
    validate(p);
    c.tensor = std::max(c.tensor, tensor_elements(p));
    c.rows = std::max(c.rows, rows(p));
    c.workspace = std::max(c.workspace, flash_attention_backward_workspace_bytes(p));
  }
  return c;
}

std::size_t arena_bytes_of(const Capacity& c) {
  return 8 * round_up(c.tensor * sizeof(__nv_bfloat16)) + round_up(c.rows * sizeof(float)) + c.workspace;
}

}  // namespace

FlashAttentionRunner::FlashAttentionRunner(const std::vector<FlashAttentionProblem>& problems)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  const Capacity capacity = capacity_for(problems);
  s.tensor_capacity = capacity.tensor;
  s.row_capacity = capacity.rows;
  s.workspace_capacity = capacity.workspace;
  s.arena = DeviceBuffer(arena_bytes_of(capacity), "FlashAttention tensors");
  if (s.arena.get() == nullptr) return;
  char* next = static_cast<char*>(s.arena.get());
  for (void*& tensor : s.tensors) {
    tensor = next;
    next += round_up(capacity.tensor * sizeof(__nv_bfloat16));
  }
  s.lse = reinterpret_cast<float*>(next);
  s.workspace = next + round_up(capacity.rows * sizeof(float));
  for (int i = 0; i < 5; ++i) fill_uniform_bf16(s.tensors[i], capacity.tensor, kSeeds[i], nullptr);  // q .. d_o
  check(cudaMemset(s.lse, 0, capacity.rows * sizeof(float)), "cudaMemset(FlashAttention L)");
  // The caller's streams may not synchronise with the default stream.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

FlashAttentionRunner::~FlashAttentionRunner() = default;

void FlashAttentionRunner::forward(const FlashAttentionProblem& problem, cudaStream_t stream) {
  const State& s = *state_;
  validate(problem);
  MEGASIM_ASSERT(s.fits(problem), "FlashAttention problem larger than the problems the runner's arena was sized for");
  flash_attention_forward(problem, {s.tensors[0], s.tensors[1], s.tensors[2], s.tensors[3], s.lse}, stream);
}

void FlashAttentionRunner::backward(const FlashAttentionProblem& problem, cudaStream_t stream) {
  const State& s = *state_;
  validate(problem);
  MEGASIM_ASSERT(s.fits(problem), "FlashAttention problem larger than the problems the runner's arena was sized for");
  flash_attention_backward(problem,
                           {s.tensors[0], s.tensors[1], s.tensors[2], s.tensors[3], s.tensors[4], s.lse, s.tensors[5],
                            s.tensors[6], s.tensors[7], s.workspace},
                           stream);
}

namespace {

void upload(void* device, const std::vector<float>& host, std::size_t count, const char* what) {
  MEGASIM_ASSERT(host.size() == count, "FlashAttention host input of the wrong size");
  std::vector<__nv_bfloat16> rounded(count);
  std::transform(host.begin(), host.end(), rounded.begin(), [](float x) { return __float2bfloat16(x); });
  check(cudaMemcpy(device, rounded.data(), count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), what);
}

std::vector<float> download_bf16(const void* device, std::size_t count, const char* what) {
  std::vector<__nv_bfloat16> raw(count);
  check(cudaMemcpy(raw.data(), device, count * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost), what);
  std::vector<float> out(count);
  std::transform(raw.begin(), raw.end(), out.begin(), [](__nv_bfloat16 x) { return __bfloat162float(x); });
  return out;
}

}  // namespace

void FlashAttentionRunner::upload_inputs(const FlashAttentionProblem& problem,
                                         const FlashAttentionHostTensors& inputs) {
  const State& s = *state_;
  validate(problem);
  MEGASIM_ASSERT(s.fits(problem), "FlashAttention problem larger than the problems the runner's arena was sized for");
  const std::size_t count = tensor_elements(problem);
  upload(s.tensors[0], inputs.q, count, "cudaMemcpy(FlashAttention q)");
  upload(s.tensors[1], inputs.k, count, "cudaMemcpy(FlashAttention k)");
  upload(s.tensors[2], inputs.v, count, "cudaMemcpy(FlashAttention v)");
  upload(s.tensors[4], inputs.d_o, count, "cudaMemcpy(FlashAttention d_o)");
}

FlashAttentionHostTensors FlashAttentionRunner::download(const FlashAttentionProblem& problem) const {
  const State& s = *state_;
  validate(problem);
  MEGASIM_ASSERT(s.fits(problem), "FlashAttention problem larger than the problems the runner's arena was sized for");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const std::size_t count = tensor_elements(problem);
  const char* what = "cudaMemcpy(FlashAttention results)";
  FlashAttentionHostTensors out;
  out.q = download_bf16(s.tensors[0], count, what);
  out.k = download_bf16(s.tensors[1], count, what);
  out.v = download_bf16(s.tensors[2], count, what);
  out.o = download_bf16(s.tensors[3], count, what);
  out.d_o = download_bf16(s.tensors[4], count, what);
  out.dq = download_bf16(s.tensors[5], count, what);
  out.dk = download_bf16(s.tensors[6], count, what);
  out.dv = download_bf16(s.tensors[7], count, what);
  out.lse.resize(rows(problem));
  check(cudaMemcpy(out.lse.data(), s.lse, out.lse.size() * sizeof(float), cudaMemcpyDeviceToHost), what);
  return out;
}

std::size_t FlashAttentionRunner::arena_bytes_for(const std::vector<FlashAttentionProblem>& problems) {
  return arena_bytes_of(capacity_for(problems));
}

std::size_t FlashAttentionRunner::arena_bytes_for(const FlashAttentionProblem& problem) {
  return arena_bytes_for(std::vector<FlashAttentionProblem>{problem});
}

std::size_t FlashAttentionRunner::arena_bytes() const {
  return state_->arena.bytes();
}

}  // namespace megasim::backend::cuda
