// The FlashAttention-2 backward (flash_attention.h has the contract, flash_attention_device.h the
// fragment layouts): three kernels on the caller's stream.
//  1. dot_kernel: D[i] = dO[i]·O[i] in fp32, one warp per row, which also zeroes the row of the fp32
//     dQ accumulator.
//  2. main_kernel: one block of four warps per (head, tile of 64 keys), each warp owning 16 keys
//     and their dK and dV accumulators (fp32 registers) for the whole block. It walks the query
//     tiles the mask leaves (64 queries for head_dim 64, 32 for 128), recomputing the transposed
//     scores Sᵀ = K·Qᵀ and computing dPᵀ = V·dOᵀ in registers, then Pᵀ = exp(scale·Sᵀ − L) and
//     dSᵀ = Pᵀ∘(dPᵀ − D), dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ and dSᵀ as register operands. dQ needs
//     dS summed over the block's keys, which four warps hold: dSᵀ goes to shared memory, the warps
//     split the query tile's dS·K (16 queries × 64 dimensions each) and add it to the fp32
//     accumulator with atomicAdd. The query tiles are double-buffered: Q, dO, L and D of the next
//     tile are copied (cp.async) while the current one is computed. Shared memory: K, V, two Q and
//     two dO tiles, dSᵀ and the vectors, 64 KiB for head_dim 64, 73.5 KiB for 128.
//  3. convert_kernel: dQ = bf16(scale · accumulator).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/flash_attention_device.h"

namespace megasim::backend::cuda::flash {
namespace {

constexpr int kDotRowsPerBlock = 8;  // one warp per row
constexpr int kConvertThreads = 256;
constexpr unsigned kMaxConvertBlocks = 8192;

template <int kDim>
__global__ void __launch_bounds__(32 * kDotRowsPerBlock) dot_kernel(const BackwardParams p) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kDotRowsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= p.rows) return;  // the whole warp
  const __nv_bfloat16* o = p.o + row * kDim;
  const __nv_bfloat16* d_o = p.d_o + row * kDim;
  float dot = 0;
  for (int c = 2 * lane; c < kDim; c += 64) {
    const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(o + c));
    const float2 y = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(d_o + c));
    dot = fmaf(x.x, y.x, fmaf(x.y, y.y, dot));
  }
  for (int c = lane; c < kDim; c += 32) p.dq_accum[row * kDim + c] = 0;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
  if (lane == 0) p.d[row] = dot;
}

// Four values per thread: `count4` float4 of the accumulator.
__global__ void __launch_bounds__(kConvertThreads)
    convert_kernel(const float* accum, __nv_bfloat16* dq, std::int64_t count4, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count4;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float4 x = reinterpret_cast<const float4*>(accum)[i];
    reinterpret_cast<uint2*>(dq)[i] =
        make_uint2(pack_bf16(x.x * scale, x.y * scale), pack_bf16(x.z * scale, x.w * scale));
  }
}

// The main kernel's shared memory, in bf16 elements (then fp32 for the vectors).
template <int kDim>
struct MainLayout {
  static constexpr int kQueries = backward_query_tile(kDim);
  static constexpr int kStride = kDim + kPad;
  static constexpr int kDsStride = kQueries + kPad;
  static constexpr int kKeyElements = kKeyTile * kStride;    // K, V
  static constexpr int kQueryElements = kQueries * kStride;  // Q, dO, per buffer
  static constexpr int kDsElements = kKeyTile * kDsStride;   // dSᵀ
  static constexpr int kBf16Elements = 2 * kKeyElements + 4 * kQueryElements + kDsElements;
  static constexpr int kBytes = kBf16Elements * 2 + 4 * kQueries * 4;  // L and D, per buffer
};

// Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for the warp's 16 keys and the query tile: C tiles of 8 queries.
template <int kDim, std::size_t kQueryTiles8>
__device__ __forceinline__ void scores(float (&st)[kQueryTiles8][4], float (&dpt)[kQueryTiles8][4],
                                       const __nv_bfloat16* k_rows, const __nv_bfloat16* v_rows,
                                       const __nv_bfloat16* q_tile, const __nv_bfloat16* do_tile, int lane) {
  constexpr int kStride = kDim + kPad;
  const LaneOffset a_lane = rows_first(lane);
  const LaneOffset b_lane = columns_first(lane);
#pragma unroll
  for (int step = 0; step < kDim / 16; ++step) {
    std::uint32_t k_a[4];
    std::uint32_t v_a[4];
    ldmatrix_x4(k_a, k_rows + a_lane.row * kStride + step * 16 + a_lane.col);
    ldmatrix_x4(v_a, v_rows + a_lane.row * kStride + step * 16 + a_lane.col);
#pragma unroll
    for (int pair = 0; pair < static_cast<int>(kQueryTiles8) / 2; ++pair) {
      const int offset = (pair * 16 + b_lane.row) * kStride + step * 16 + b_lane.col;
      std::uint32_t b[4];
      ldmatrix_x4(b, q_tile + offset);
      mma_16816(st[2 * pair], k_a, b[0], b[1]);
      mma_16816(st[2 * pair + 1], k_a, b[2], b[3]);
      ldmatrix_x4(b, do_tile + offset);
      mma_16816(dpt[2 * pair], v_a, b[0], b[1]);
      mma_16816(dpt[2 * pair + 1], v_a, b[2], b[3]);
    }
  }
}

// dV += Pᵀ·dO and dK += dSᵀ·Q for the warp's 16 keys: Pᵀ and dSᵀ (C tiles of 8 queries) are the A
// operands, dO and Q ([query][dim] tiles) the B operands.
template <int kDim, std::size_t kDimTiles8, std::size_t kQueryTiles8>
__device__ __forceinline__ void accumulate_dk_dv(float (&dk)[kDimTiles8][4], float (&dv)[kDimTiles8][4],
                                                 const float (&pt)[kQueryTiles8][4],
                                                 const float (&dst)[kQueryTiles8][4], const __nv_bfloat16* q_tile,
                                                 const __nv_bfloat16* do_tile, int lane) {
  constexpr int kStride = kDim + kPad;
  const LaneOffset b_lane = rows_first(lane);
#pragma unroll
  for (int step = 0; step < static_cast<int>(kQueryTiles8) / 2; ++step) {
    std::uint32_t p_a[4];
    std::uint32_t ds_a[4];
    a_from_c(p_a, pt, step);
    a_from_c(ds_a, dst, step);
#pragma unroll
    for (int pair = 0; pair < kDim / 16; ++pair) {
      const int offset = (step * 16 + b_lane.row) * kStride + pair * 16 + b_lane.col;
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, do_tile + offset);
      mma_16816(dv[2 * pair], p_a, b[0], b[1]);
      mma_16816(dv[2 * pair + 1], p_a, b[2], b[3]);
      ldmatrix_x4_trans(b, q_tile + offset);
      mma_16816(dk[2 * pair], ds_a, b[0], b[1]);
      mma_16816(dk[2 * pair + 1], ds_a, b[2], b[3]);
    }
  }
}

// The warp's share of dQ += dS·K for the query tile from first_query: 16 queries × 64 dimensions,
// dS read from the block's dSᵀ ([key][query]) in shared memory, added to the fp32 accumulator.
template <int kDim>
__device__ __forceinline__ void accumulate_dq(const BackwardParams& p, const __nv_bfloat16* ds_tile,
                                              const __nv_bfloat16* k_tile, float* dq_head, int first_query, int warp,
                                              int lane) {
  using Layout = MainLayout<kDim>;
  constexpr int kQueryWarps = Layout::kQueries / 16;
  constexpr int kWarpDims = kDim / (kWarps / kQueryWarps);
  const int query_warp = warp % kQueryWarps;
  const int first_dim = warp / kQueryWarps * kWarpDims;
  const LaneOffset a_lane = columns_first(lane);
  const LaneOffset b_lane = rows_first(lane);
  float dq[kWarpDims / 8][4] = {};
#pragma unroll
  for (int step = 0; step < kKeyTile / 16; ++step) {
    std::uint32_t a[4];
    ldmatrix_x4_trans(a, ds_tile + (step * 16 + a_lane.row) * Layout::kDsStride + query_warp * 16 + a_lane.col);
#pragma unroll
    for (int pair = 0; pair < kWarpDims / 16; ++pair) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, k_tile + (step * 16 + b_lane.row) * Layout::kStride + first_dim + pair * 16 + b_lane.col);
      mma_16816(dq[2 * pair], a, b[0], b[1]);
      mma_16816(dq[2 * pair + 1], a, b[2], b[3]);
    }
  }
  const int query = first_query + query_warp * 16 + lane / 4;
  const int dim = first_dim + 2 * (lane % 4);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int q = query + 8 * (e / 2);
    if (q >= p.mask.seq) continue;
    float* row = dq_head + static_cast<std::int64_t>(q) * kDim + dim + e % 2;
#pragma unroll
    for (int n = 0; n < kWarpDims / 8; ++n) atomicAdd(row + n * 8, dq[n][e]);
  }
}

template <int kDim>
__global__ void __launch_bounds__(kThreads) main_kernel(const BackwardParams p) {
  using Layout = MainLayout<kDim>;
  constexpr int kQueries = Layout::kQueries;
  constexpr int kQueryTiles8 = kQueries / 8;
  extern __shared__ __align__(16) unsigned char shared[];
  auto* k_tile = reinterpret_cast<__nv_bfloat16*>(shared);
  __nv_bfloat16* v_tile = k_tile + Layout::kKeyElements;
  __nv_bfloat16* q_tiles = v_tile + Layout::kKeyElements;          // two buffers
  __nv_bfloat16* do_tiles = q_tiles + 2 * Layout::kQueryElements;  // two buffers
  __nv_bfloat16* ds_tile = do_tiles + 2 * Layout::kQueryElements;
  auto* lse_vectors = reinterpret_cast<float*>(ds_tile + Layout::kDsElements);  // two buffers
  float* d_vectors = lse_vectors + 2 * kQueries;                                // two buffers

  const auto block = static_cast<std::int64_t>(blockIdx.x);
  const int tile = static_cast<int>(block % p.key_tiles);  // causal: the first keys have the most queries
  const std::int64_t head = block / p.key_tiles;
  const int seq = p.mask.seq;
  const std::int64_t head_offset = head * seq * kDim;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int first_key = tile * kKeyTile;
  const int key = first_key + warp * 16 + lane / 4;  // the key of c0, c1; key + 8 that of c2, c3
  const int column = 2 * (lane % 4);                 // of c0 within an n-tile
  const TileRange queries = backward_query_tiles(p.mask, tile, kQueries);
  const float scale_log2 = p.scale * kLog2e;

  const auto load_queries = [&](int query_tile, int buffer) {
    const int first = query_tile * kQueries;
    load_tile<kQueries, kDim>(q_tiles + buffer * Layout::kQueryElements, p.q + head_offset, first, seq);
    load_tile<kQueries, kDim>(do_tiles + buffer * Layout::kQueryElements, p.d_o + head_offset, first, seq);
    load_vector<kQueries>(lse_vectors + buffer * kQueries, p.lse + head * seq, first, seq);
    load_vector<kQueries>(d_vectors + buffer * kQueries, p.d + head * seq, first, seq);
  };
  load_tile<kKeyTile, kDim>(k_tile, p.k + head_offset, first_key, seq);
  load_tile<kKeyTile, kDim>(v_tile, p.v + head_offset, first_key, seq);
  load_queries(queries.first, 0);
  cp_async_commit();

  float dk[kDim / 8][4] = {};
  float dv[kDim / 8][4] = {};
  for (int query_tile = queries.first, buffer = 0; query_tile < queries.end; ++query_tile, buffer ^= 1) {
    cp_async_wait_all();  // this tile's queries, and every warp done with the previous tile
    __syncthreads();
    if (query_tile + 1 < queries.end) {
      load_queries(query_tile + 1, buffer ^ 1);
      cp_async_commit();
    }
    const __nv_bfloat16* q_tile = q_tiles + buffer * Layout::kQueryElements;
    const __nv_bfloat16* do_tile = do_tiles + buffer * Layout::kQueryElements;
    const float* lse = lse_vectors + buffer * kQueries;
    const float* d = d_vectors + buffer * kQueries;
    const int first_query = query_tile * kQueries;

    float st[kQueryTiles8][4] = {};   // Sᵀ, then Pᵀ
    float dpt[kQueryTiles8][4] = {};  // dPᵀ, then dSᵀ
    scores<kDim>(st, dpt, k_tile + warp * 16 * Layout::kStride, v_tile + warp * 16 * Layout::kStride, q_tile, do_tile,
                 lane);
    const bool masked = tile_needs_mask(p.mask, first_query, kQueries, first_key, kKeyTile);
#pragma unroll
    for (int n = 0; n < kQueryTiles8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int query = n * 8 + column + e % 2;  // in the tile
        const bool visible = !masked || p.mask.visible(first_query + query, key + 8 * (e / 2));
        const float prob = visible ? exp2f(fmaf(st[n][e], scale_log2, -lse[query] * kLog2e)) : 0.0f;
        st[n][e] = prob;
        dpt[n][e] = prob * (dpt[n][e] - d[query]);
      }
    }
    accumulate_dk_dv<kDim>(dk, dv, st, dpt, q_tile, do_tile, lane);

    __nv_bfloat16* ds_row = ds_tile + (warp * 16 + lane / 4) * Layout::kDsStride + column;
#pragma unroll
    for (int n = 0; n < kQueryTiles8; ++n) {
      *reinterpret_cast<std::uint32_t*>(ds_row + n * 8) = pack_bf16(dpt[n][0], dpt[n][1]);
      *reinterpret_cast<std::uint32_t*>(ds_row + 8 * Layout::kDsStride + n * 8) = pack_bf16(dpt[n][2], dpt[n][3]);
    }
    __syncthreads();  // the block's dSᵀ
    accumulate_dq<kDim>(p, ds_tile, k_tile, p.dq_accum + head_offset, first_query, warp, lane);
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int k = key + 8 * r;
    if (k >= seq) continue;
    const std::int64_t offset = head_offset + static_cast<std::int64_t>(k) * kDim + column;
#pragma unroll
    for (int n = 0; n < kDim / 8; ++n) {
      *reinterpret_cast<std::uint32_t*>(p.dk + offset + n * 8) =
          pack_bf16(dk[n][2 * r] * p.scale, dk[n][2 * r + 1] * p.scale);
      *reinterpret_cast<std::uint32_t*>(p.dv + offset + n * 8) = pack_bf16(dv[n][2 * r], dv[n][2 * r + 1]);
    }
  }
}

template <int kDim>
void launch(const BackwardParams& p, std::int64_t batch_heads, cudaStream_t stream) {
  const auto dot_blocks = static_cast<unsigned>((p.rows + kDotRowsPerBlock - 1) / kDotRowsPerBlock);
  dot_kernel<kDim><<<dot_blocks, 32 * kDotRowsPerBlock, 0, stream>>>(p);
  check(cudaGetLastError(), "flash_attention_backward dot kernel launch");

  constexpr int kBytes = MainLayout<kDim>::kBytes;
  check(cudaFuncSetAttribute(main_kernel<kDim>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes),
        "cudaFuncSetAttribute(flash_attention_backward)");
  main_kernel<kDim><<<static_cast<unsigned>(batch_heads * p.key_tiles), kThreads, kBytes, stream>>>(p);
  check(cudaGetLastError(), "flash_attention_backward main kernel launch");

  const std::int64_t count4 = p.rows * kDim / 4;
  const auto convert_blocks = static_cast<unsigned>(
      std::min<std::int64_t>(kMaxConvertBlocks, (count4 + kConvertThreads - 1) / kConvertThreads));
  convert_kernel<<<convert_blocks, kConvertThreads, 0, stream>>>(p.dq_accum, p.dq, count4, p.scale);
  check(cudaGetLastError(), "flash_attention_backward dQ conversion launch");
}

}  // namespace

void launch_backward(const BackwardParams& params, std::int64_t batch_heads, int head_dim, cudaStream_t stream) {
  if (head_dim == 64) {
    launch<64>(params, batch_heads, stream);
  } else {
    launch<128>(params, batch_heads, stream);
  }
}

}  // namespace megasim::backend::cuda::flash
