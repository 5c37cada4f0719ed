// The FlashAttention forward kernel (flash_attention.h has the contract, flash_attention_device.h
// the fragment layouts). One block of four warps per (head, tile of 64 queries), each warp owning 16
// query rows: Q's fragments stay in registers, the key tiles stream through shared memory, and the
// scores S = Q·Kᵀ of a 64-key tile are softmaxed online in registers (running row max and row sum,
// the output accumulator rescaled when the max grows) before P·V adds to the fp32 output. Only the
// block's scores of one key tile ever exist.
//
// Pipeline: V of tile j is copied (cp.async) while S of tile j is computed, K of tile j + 1 while
// P·V of tile j is: shared memory holds Q, one K and one V tile, (64 + 2·64)·(head_dim + 8) bf16:
// 27 KiB for head_dim 64, 51 KiB for 128.
#include <cuda_bf16.h>

#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/flash_attention_device.h"

namespace megasim::backend::cuda::flash {
namespace {

template <int kDim>
constexpr int forward_shared_bytes() {
  return (kForwardQueryTile + 2 * kKeyTile) * (kDim + kPad) * static_cast<int>(sizeof(__nv_bfloat16));
}

// Online softmax of one key tile's scores `s` (raw q·k, fp32) for the thread's two rows: replaces
// them by exp(scale·(s − running max)), adds their sum to `row_sum` and rescales `row_sum` and the
// output `o` by exp(scale·(old max − new max)). A row without a visible key so far keeps a max of
// −inf and contributes nothing.
template <std::size_t kKeyTiles8, std::size_t kDimTiles8>
__device__ __forceinline__ void online_softmax(float (&s)[kKeyTiles8][4], float (&o)[kDimTiles8][4],
                                               float (&row_max)[2], float (&row_sum)[2], float scale_log2) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = row_max[r];
#pragma unroll
    for (std::size_t n = 0; n < kKeyTiles8; ++n) tile_max = fmaxf(tile_max, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
    tile_max = group_max(tile_max);
    const float base = tile_max == -INFINITY ? 0.0f : tile_max * scale_log2;
    const float rescale = exp2f(row_max[r] * scale_log2 - base);  // 0 while the old max is −inf
    row_max[r] = tile_max;
    float sum = 0;
#pragma unroll
    for (std::size_t n = 0; n < kKeyTiles8; ++n) {
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        s[n][e] = exp2f(fmaf(s[n][e], scale_log2, -base));
        sum += s[n][e];
      }
    }
    row_sum[r] = row_sum[r] * rescale + sum;
#pragma unroll
    for (std::size_t n = 0; n < kDimTiles8; ++n) {
      o[n][2 * r] *= rescale;
      o[n][2 * r + 1] *= rescale;
    }
  }
}

template <int kDim>
__global__ void __launch_bounds__(kThreads) forward_kernel(const ForwardParams p) {
  constexpr int kStride = kDim + kPad;
  constexpr int kKeyTiles8 = kKeyTile / 8;  // n-tiles of S
  constexpr int kDimTiles8 = kDim / 8;      // n-tiles of O
  extern __shared__ __align__(16) unsigned char shared[];
  auto* q_tile = reinterpret_cast<__nv_bfloat16*>(shared);
  __nv_bfloat16* k_tile = q_tile + kForwardQueryTile * kStride;
  __nv_bfloat16* v_tile = k_tile + kKeyTile * kStride;

  const auto block = static_cast<std::int64_t>(blockIdx.x);
  const int tile = p.query_tiles - 1 - static_cast<int>(block % p.query_tiles);  // the longest rows first
  const std::int64_t head = block / p.query_tiles;
  const int seq = p.mask.seq;
  const std::int64_t head_offset = head * seq * kDim;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int first_query = tile * kForwardQueryTile;
  const int row = first_query + warp * 16 + lane / 4;  // the query of c0, c1; row + 8 that of c2, c3
  const int column = 2 * (lane % 4);                   // of c0 within an n-tile
  const LaneOffset rows_first_lane = rows_first(lane);
  const LaneOffset columns_first_lane = columns_first(lane);
  const TileRange keys = forward_key_tiles(p.mask, tile);
  const float scale_log2 = p.scale * kLog2e;

  load_tile<kForwardQueryTile, kDim>(q_tile, p.q + head_offset, first_query, seq);
  load_tile<kKeyTile, kDim>(k_tile, p.k + head_offset, keys.first * kKeyTile, seq);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  std::uint32_t q_fragments[kDim / 16][4];
#pragma unroll
  for (int step = 0; step < kDim / 16; ++step) {
    ldmatrix_x4(q_fragments[step],
                q_tile + (warp * 16 + rows_first_lane.row) * kStride + step * 16 + rows_first_lane.col);
  }

  float o[kDimTiles8][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0, 0};
  for (int key_tile = keys.first; key_tile < keys.end; ++key_tile) {
    const int first_key = key_tile * kKeyTile;
    cp_async_wait_all();  // K of this tile, and every warp done with the previous V
    __syncthreads();
    load_tile<kKeyTile, kDim>(v_tile, p.v + head_offset, first_key, seq);
    cp_async_commit();

    float s[kKeyTiles8][4] = {};
#pragma unroll
    for (int step = 0; step < kDim / 16; ++step) {
#pragma unroll
      for (int pair = 0; pair < kKeyTile / 16; ++pair) {
        std::uint32_t b[4];
        ldmatrix_x4(b, k_tile + (pair * 16 + columns_first_lane.row) * kStride + step * 16 + columns_first_lane.col);
        mma_16816(s[2 * pair], q_fragments[step], b[0], b[1]);
        mma_16816(s[2 * pair + 1], q_fragments[step], b[2], b[3]);
      }
    }
    if (tile_needs_mask(p.mask, first_query, kForwardQueryTile, first_key, kKeyTile)) {
#pragma unroll
      for (int n = 0; n < kKeyTiles8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (!p.mask.visible(row + 8 * (e / 2), first_key + n * 8 + column + e % 2)) s[n][e] = -INFINITY;
        }
      }
    }
    online_softmax(s, o, row_max, row_sum, scale_log2);

    cp_async_wait_all();  // V of this tile, and every warp done with K
    __syncthreads();
    if (key_tile + 1 < keys.end) {
      load_tile<kKeyTile, kDim>(k_tile, p.k + head_offset, first_key + kKeyTile, seq);
      cp_async_commit();
    }
#pragma unroll
    for (int step = 0; step < kKeyTile / 16; ++step) {
      std::uint32_t a[4];
      a_from_c(a, s, step);
#pragma unroll
      for (int pair = 0; pair < kDim / 16; ++pair) {
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, v_tile + (step * 16 + rows_first_lane.row) * kStride + pair * 16 + rows_first_lane.col);
        mma_16816(o[2 * pair], a, b[0], b[1]);
        mma_16816(o[2 * pair + 1], a, b[2], b[3]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int query = row + 8 * r;
    const float sum = group_sum(row_sum[r]);  // every lane of the group takes part
    if (query >= seq) continue;
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    __nv_bfloat16* out = p.o + head_offset + static_cast<std::int64_t>(query) * kDim + column;
#pragma unroll
    for (int n = 0; n < kDimTiles8; ++n) {
      *reinterpret_cast<std::uint32_t*>(out + n * 8) = pack_bf16(o[n][2 * r] * inverse, o[n][2 * r + 1] * inverse);
    }
    if (column == 0) p.lse[head * seq + query] = sum > 0 ? row_max[r] * p.scale + logf(sum) : -INFINITY;
  }
}

template <int kDim>
void launch(const ForwardParams& params, std::int64_t batch_heads, cudaStream_t stream) {
  constexpr int kBytes = forward_shared_bytes<kDim>();
  check(cudaFuncSetAttribute(forward_kernel<kDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes),
        "cudaFuncSetAttribute(flash_attention_forward)");
  const auto blocks = static_cast<unsigned>(batch_heads * params.query_tiles);
  forward_kernel<kDim><<<blocks, kThreads, kBytes, stream>>>(params);
  check(cudaGetLastError(), "flash_attention_forward kernel launch");
}

}  // namespace

void launch_forward(const ForwardParams& params, std::int64_t batch_heads, int head_dim, cudaStream_t stream) {
  if (head_dim == 64) {
    launch<64>(params, batch_heads, stream);
  } else {
    launch<128>(params, batch_heads, stream);
  }
}

}  // namespace megasim::backend::cuda::flash
