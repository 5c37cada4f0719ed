// The pieces the FlashAttention kernels share (flash_attention.h has the contract): the tile sizes
// and the tiles a mask leaves to visit, decided here once for the kernels and for the FLOP count,
// the kernels' parameters, and thin wrappers of the PTX instructions they are built from. Only for
// this folder's .cu files (it includes CUDA headers and device code).
//
// Fragment layouts, as the PTX ISA defines them for mma.sync.m16n8k16 with bf16 operands (lane =
// 4·g + t, g the group 0..7, t the thread in the group 0..3; each 32-bit register holds two bf16,
// the lower column in the low half):
//   A 16×16 (row): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
//   B 16×8 (col):  b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
//   C 16×8 (fp32): c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
// So a C tile pair (columns 16k..16k+15) is, packed to bf16, the A fragment of the next product's
// k-step k, which keeps P and dS in registers. ldmatrix.x4 loads four 8×8 bf16 matrices, lane l
// giving the address of row l % 8 of matrix l / 8; lane l receives, of each, row l / 4, columns
// 2(l % 4) and 2(l % 4) + 1, or with .trans column l / 4, rows 2(l % 4) and 2(l % 4) + 1. Hence:
//   A from an [m][k] tile, or B of two n-tiles from a [k][n] tile with .trans: matrices at
//   (row, col) offsets (0, 0), (8, 0), (0, 8), (8, 8) (kRowsFirst);
//   B of two n-tiles from an [n][k] tile, or A from a [k][m] tile with .trans: (0, 0), (0, 8),
//   (8, 0), (8, 8) (kColumnsFirst).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace megasim::backend::cuda::flash {

constexpr int kThreads = 128;  // four warps
constexpr int kWarps = kThreads / 32;
constexpr int kPad = 8;                // bf16 per shared-memory row beyond the data: ldmatrix without bank conflicts
constexpr int kForwardQueryTile = 64;  // 16 query rows per warp
constexpr int kKeyTile = 64;           // forward: keys per step; backward: keys per block, 16 per warp

// Backward: queries per step (fewer for head_dim 128, whose dK and dV accumulators take 128
// registers per thread).
__host__ __device__ constexpr int backward_query_tile(int head_dim) {
  return head_dim == 64 ? 64 : 32;
}

// Which (query, key) pairs count, with the sequence length: see flash_attention.h. `window` is the
// effective one (0 when the problem's window is 0 or >= seq).
struct Mask {
  int seq = 1;
  bool causal = true;
  int window = 0;

  __host__ __device__ bool visible(int query, int key) const {
    return query < seq && key < seq && (!causal || key <= query) && (window == 0 || key > query - window);
  }
};

// Whether any (query, key) pair of the block of `queries` queries from first_query and `keys` keys
// from first_key is masked (including queries or keys past seq), so that the kernels mask only the
// tiles on the mask's edges.
__host__ __device__ inline bool tile_needs_mask(const Mask& m, int first_query, int queries, int first_key, int keys) {
  const int last_query = first_query + queries - 1;
  const int last_key = first_key + keys - 1;
  return last_query >= m.seq || last_key >= m.seq || (m.causal && last_key > first_query) ||
         (m.window > 0 && last_query - m.window >= first_key);
}

// Tiles [first, end) of one dimension.
struct TileRange {
  int first = 0;
  int end = 0;
};

// Key tiles of kKeyTile that query tile `tile` (of kForwardQueryTile) visits: those holding a key
// visible to one of its queries.
__host__ __device__ inline TileRange forward_key_tiles(const Mask& m, int tile) {
  const int first_query = tile * kForwardQueryTile;
  const int last_query = (first_query + kForwardQueryTile < m.seq ? first_query + kForwardQueryTile : m.seq) - 1;
  const int key_end = m.causal ? last_query + 1 : m.seq;
  const int first_key = m.window > 0 && first_query - m.window + 1 > 0 ? first_query - m.window + 1 : 0;
  return {first_key / kKeyTile, (key_end + kKeyTile - 1) / kKeyTile};
}

// Query tiles of `query_tile` queries that key tile `tile` (of kKeyTile) visits.
__host__ __device__ inline TileRange backward_query_tiles(const Mask& m, int tile, int query_tile) {
  const int first_key = tile * kKeyTile;
  const int last_key = (first_key + kKeyTile < m.seq ? first_key + kKeyTile : m.seq) - 1;
  const int first_query = m.causal ? first_key : 0;
  const int query_end = m.window > 0 && last_key + m.window < m.seq ? last_key + m.window : m.seq;
  return {first_query / query_tile, (query_end + query_tile - 1) / query_tile};
}

struct ForwardParams {
  const __nv_bfloat16* q = nullptr;
  const __nv_bfloat16* k = nullptr;
  const __nv_bfloat16* v = nullptr;
  __nv_bfloat16* o = nullptr;
  float* lse = nullptr;
  Mask mask;
  int query_tiles = 1;  // per head; the grid is batch_heads × query_tiles blocks
  float scale = 1;
};

struct BackwardParams {
  const __nv_bfloat16* q = nullptr;
  const __nv_bfloat16* k = nullptr;
  const __nv_bfloat16* v = nullptr;
  const __nv_bfloat16* o = nullptr;
  const __nv_bfloat16* d_o = nullptr;
  const float* lse = nullptr;
  __nv_bfloat16* dq = nullptr;
  __nv_bfloat16* dk = nullptr;
  __nv_bfloat16* dv = nullptr;
  float* d = nullptr;         // D per row, from the pre-pass
  float* dq_accum = nullptr;  // fp32 dQ / scale, zeroed by the pre-pass
  Mask mask;
  int key_tiles = 1;      // per head; the main kernel's grid is batch_heads × key_tiles blocks
  std::int64_t rows = 1;  // batch_heads · seq
  float scale = 1;
};

// Enqueue the kernels for head_dim 64 or 128 and check the launches (CudaError).
void launch_forward(const ForwardParams& params, std::int64_t batch_heads, int head_dim, cudaStream_t stream);
void launch_backward(const BackwardParams& params, std::int64_t batch_heads, int head_dim, cudaStream_t stream);

#if defined(__CUDACC__)

constexpr float kLog2e = 1.4426950408889634f;

// D = C + A·B for one m16n8k16 tile, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const __nv_bfloat16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const __nv_bfloat16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// The row and column this lane addresses in an ldmatrix.x4 of the two orders described above.
struct LaneOffset {
  int row = 0;
  int col = 0;
};
__device__ __forceinline__ LaneOffset rows_first(int lane) {
  return {lane % 8 + 8 * (lane / 8 % 2), 8 * (lane / 16)};
}
__device__ __forceinline__ LaneOffset columns_first(int lane) {
  return {lane % 8 + 8 * (lane / 16), 8 * (lane / 8 % 2)};
}

// 16 bytes from global to shared memory, asynchronously; zeros instead when !inside.
__device__ __forceinline__ void cp_async_16(void* shared, const void* global, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)),
               "l"(__cvta_generic_to_global(global)), "r"(inside ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_4(void* shared, const void* global, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared)),
               "l"(__cvta_generic_to_global(global)), "r"(inside ? 4 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits for every cp.async this thread issued; a __syncthreads() must follow before other threads
// read the data.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// Rows [first_row, first_row + Rows) of one head's [seq][D] tensor into a shared tile of
// Rows × (D + kPad), zeros for rows at or past seq.
template <int Rows, int D>
__device__ __forceinline__ void load_tile(__nv_bfloat16* tile, const __nv_bfloat16* head, int first_row, int seq) {
  constexpr int kChunksPerRow = D / 8;
  static_assert(Rows * kChunksPerRow % kThreads == 0, "whole chunks per thread");
#pragma unroll
  for (int i = 0; i < Rows * kChunksPerRow / kThreads; ++i) {
    const int chunk = i * kThreads + static_cast<int>(threadIdx.x);
    const int row = chunk / kChunksPerRow;
    const int col = chunk % kChunksPerRow * 8;
    const bool inside = first_row + row < seq;
    const std::int64_t offset = inside ? static_cast<std::int64_t>(first_row + row) * D + col : 0;
    cp_async_16(tile + row * (D + kPad) + col, head + offset, inside);
  }
}

// Rows [first_row, first_row + Rows) of one head's fp32 vector into shared memory, zeros past seq.
template <int Rows>
__device__ __forceinline__ void load_vector(float* shared, const float* head, int first_row, int seq) {
  for (int row = static_cast<int>(threadIdx.x); row < Rows; row += kThreads) {
    const bool inside = first_row + row < seq;
    cp_async_4(shared + row, head + (inside ? first_row + row : 0), inside);
  }
}

__device__ __forceinline__ std::uint32_t pack_bf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const std::uint32_t*>(&pair);
}

// The A fragment of k-step `step` of a product whose left operand is the C tiles `c` (n-tiles of 8
// columns) of the previous one, rounded to bf16.
template <std::size_t kTiles>
__device__ __forceinline__ void a_from_c(std::uint32_t (&a)[4], const float (&c)[kTiles][4], int step) {
  a[0] = pack_bf16(c[2 * step][0], c[2 * step][1]);
  a[1] = pack_bf16(c[2 * step][2], c[2 * step][3]);
  a[2] = pack_bf16(c[2 * step + 1][0], c[2 * step + 1][1]);
  a[3] = pack_bf16(c[2 * step + 1][2], c[2 * step + 1][3]);
}

// The maximum or sum over the four threads of a group (the threads holding one row of a C tile).
__device__ __forceinline__ float group_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float group_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

#endif  // __CUDACC__

}  // namespace megasim::backend::cuda::flash
