// FlashAttention (flash_attention.h). Invalid problems, the arena's size and the FLOP count are
// checked everywhere; the kernels need a GPU and skip where none is visible: forward O and L and
// backward dQ, dK, dV against a double-precision host reference of the same bf16 inputs, in every
// mask and both head dimensions, and a deterministic forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/device_info.h"
#include "backend/cuda/flash_attention.h"

namespace megasim::backend::cuda {
namespace {

FlashAttentionProblem problem(std::int64_t batch_heads, std::int64_t seq, std::int64_t head_dim, bool causal,
                              std::int64_t window = 0) {
  return {batch_heads, seq, head_dim, causal, window};
}

void expect_invalid(const FlashAttentionProblem& p, const std::string& message) {
  try {
    validate(p);
    ADD_FAILURE() << "accepted " << message;
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(FlashAttention, InvalidProblemsAreRejectedWithTheReason) {
  expect_invalid(problem(0, 128, 64, true), "batch_heads >= 1");
  expect_invalid(problem(1, 0, 64, true), "1 <= seq <= 2^30");
  expect_invalid(problem(1, (std::int64_t{1} << 30) + 1, 64, true), "seq <= 2^30");
  expect_invalid(problem(std::int64_t{1} << 12, std::int64_t{1} << 19, 64, true), "batch_heads·seq < 2^31");
  expect_invalid(problem(1, 128, 96, true), "head_dim 96 is not supported: head_dim must be 64 or 128");
  expect_invalid(problem(1, 128, 64, true, -1), "window must be >= 0");
  expect_invalid(problem(1, 128, 64, false, 16), "a sliding window needs causal = true");
  EXPECT_NO_THROW(validate(problem(3, 1, 128, false)));
  EXPECT_NO_THROW(validate(problem(1, 1000, 64, true, 5000)));  // a window past seq: no limit
  EXPECT_THROW(flash_attention_flops(problem(1, 128, 80, true)), CudaError);
  EXPECT_THROW(FlashAttentionRunner::arena_bytes_for(problem(1, 128, 80, true)), CudaError);
}

// Pointers are checked before any CUDA call, so these run without a GPU.
TEST(FlashAttention, NullAndMisalignedPointersAreRejected) {
  const FlashAttentionProblem p = problem(1, 64, 64, true);
  try {
    flash_attention_forward(p, {}, nullptr);
    ADD_FAILURE() << "accepted null tensors";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("flash_attention_forward: q is null"), std::string::npos) << e.what();
  }
  alignas(16) static char storage[64];
  FlashAttentionBackwardArgs args;
  args.q = args.k = args.v = args.o = args.d_o = storage;
  args.lse = reinterpret_cast<const float*>(storage);
  args.dq = args.dk = args.workspace = storage;
  args.dv = storage + 8;
  try {
    flash_attention_backward(p, args, nullptr);
    ADD_FAILURE() << "accepted a misaligned dv";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("dv is not 16-byte aligned"), std::string::npos) << e.what();
  }
}

TEST(FlashAttention, ArenaHoldsTheLargestOfEachTensor) {
  // 3·17·64 bf16 = 6528 bytes → 6656 per tensor, ×8; L: 51 floats → 256; workspace: D 256 + the
  // fp32 dQ 13056.
  EXPECT_EQ(flash_attention_backward_workspace_bytes(problem(3, 17, 64, true)), 256u + 13056u);
  EXPECT_EQ(FlashAttentionRunner::arena_bytes_for(problem(3, 17, 64, true)), 8u * 6656u + 256u + 13312u);
  // 1·1000·64 has the largest tensors (64000 values) and rows (1000); its workspace 4096 + 256000 is the larger.
  const std::vector<FlashAttentionProblem> both = {problem(1, 1000, 64, true), problem(4, 100, 128, false)};
  EXPECT_EQ(FlashAttentionRunner::arena_bytes_for(both), 8u * 128000u + 4096u + 260096u);
  EXPECT_EQ(FlashAttentionRunner::arena_bytes_for(std::vector<FlashAttentionProblem>{}), 0u);
}

// One tile product: 2·queries·keys·head_dim FLOPs.
double tile_flops(double queries, double keys, double head_dim) {
  return 2 * queries * keys * head_dim;
}

TEST(FlashAttention, FlopsCountTheTilesTheKernelsVisit) {
  // One 64-query tile: causal visits the same single key tile as full attention.
  const double one_tile = tile_flops(64, 64, 64);
  for (const bool causal : {true, false}) {
    const FlashAttentionFlops f = flash_attention_flops(problem(2, 64, 64, causal));
    EXPECT_DOUBLE_EQ(f.forward, 2 * 2 * one_tile);
    EXPECT_DOUBLE_EQ(f.backward, 2 * 5 * one_tile);
  }
  // seq 1 still runs whole tiles: forward 64×64, backward (head_dim 128) 64 keys × 32 queries.
  const FlashAttentionFlops single = flash_attention_flops(problem(1, 1, 128, true));
  EXPECT_DOUBLE_EQ(single.forward, 2 * tile_flops(64, 64, 128));
  EXPECT_DOUBLE_EQ(single.backward, 5 * tile_flops(32, 64, 128));
  // seq 128 in tiles of 64: causal visits 3 of the 4 tile pairs (the backward's 32-query tiles of
  // head_dim 128: 4 + 2 of 8).
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 128, 64, true)).forward, 3 * 2 * one_tile);
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 128, 64, false)).forward, 4 * 2 * one_tile);
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 128, 64, true)).backward, 3 * 5 * one_tile);
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 128, 128, true)).backward, 6 * 5 * tile_flops(32, 64, 128));
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 128, 128, false)).backward, 8 * 5 * tile_flops(32, 64, 128));
  // seq 256, window 64: query tile t sees key tiles t − 1 and t (tile 0 only itself): 1 + 3·2.
  const FlashAttentionFlops window = flash_attention_flops(problem(1, 256, 64, true, 64));
  EXPECT_DOUBLE_EQ(window.forward, 7 * 2 * one_tile);
  EXPECT_DOUBLE_EQ(window.backward, 7 * 5 * one_tile);
  // A window of seq or more is no window; batch_heads multiplies.
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(5, 256, 64, true, 256)).forward,
                   5 * flash_attention_flops(problem(1, 256, 64, true)).forward);
  // The ragged last tile counts whole: seq 65 is two query tiles, 3 tile pairs causal.
  EXPECT_DOUBLE_EQ(flash_attention_flops(problem(1, 65, 64, true)).forward, 3 * 2 * one_tile);
}

bool gpu_visible() {
  return !visible_gpus().empty();
}

// Values m/64 with |m| <= 64: exact in bf16, so host and device see the same inputs.
std::vector<float> random_tensor(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> m(-64, 64);
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(m(rng)) / 64.0f;
  return out;
}

// Straightforward attention in double precision: the definitions of flash_attention.h.
struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
};

bool visible(const FlashAttentionProblem& p, std::int64_t i, std::int64_t j) {
  return (!p.causal || j <= i) && (p.window == 0 || j > i - p.window);
}

Reference reference(const FlashAttentionProblem& p, const FlashAttentionHostTensors& in) {
  const std::int64_t s = p.seq;
  const std::int64_t d = p.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto at = [&](const std::vector<float>& t, std::int64_t h, std::int64_t row, std::int64_t c) {
    return static_cast<double>(t[static_cast<std::size_t>((h * s + row) * d + c)]);
  };
  const auto n = static_cast<std::size_t>(p.batch_heads * s * d);
  Reference r{std::vector<double>(n), std::vector<double>(static_cast<std::size_t>(p.batch_heads * s)),
              std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> prob(static_cast<std::size_t>(s));
  for (std::int64_t h = 0; h < p.batch_heads; ++h) {
    for (std::int64_t i = 0; i < s; ++i) {
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (std::int64_t c = 0; c < d; ++c) dot += at(in.q, h, i, c) * at(in.k, h, j, c);
        prob[static_cast<std::size_t>(j)] = visible(p, i, j) ? scale * dot : -std::numeric_limits<double>::infinity();
        max = std::max(max, prob[static_cast<std::size_t>(j)]);
      }
      double sum = 0;
      for (double& x : prob) sum += (x = std::exp(x - max));
      r.lse[static_cast<std::size_t>(h * s + i)] = max + std::log(sum);
      for (double& x : prob) x /= sum;
      const std::size_t row = static_cast<std::size_t>((h * s + i) * d);
      for (std::int64_t c = 0; c < d; ++c) {
        for (std::int64_t j = 0; j < s; ++j)
          r.o[row + static_cast<std::size_t>(c)] += prob[static_cast<std::size_t>(j)] * at(in.v, h, j, c);
      }
      double delta = 0;  // D
      for (std::int64_t c = 0; c < d; ++c) delta += at(in.d_o, h, i, c) * r.o[row + static_cast<std::size_t>(c)];
      for (std::int64_t j = 0; j < s; ++j) {
        const double pj = prob[static_cast<std::size_t>(j)];
        if (pj == 0) continue;
        double dp = 0;
        for (std::int64_t c = 0; c < d; ++c) dp += at(in.d_o, h, i, c) * at(in.v, h, j, c);
        const double ds = pj * (dp - delta);
        const std::size_t key = static_cast<std::size_t>((h * s + j) * d);
        for (std::int64_t c = 0; c < d; ++c) {
          const auto cc = static_cast<std::size_t>(c);
          r.dq[row + cc] += scale * ds * at(in.k, h, j, c);
          r.dk[key + cc] += scale * ds * at(in.q, h, i, c);
          r.dv[key + cc] += pj * at(in.d_o, h, i, c);
        }
      }
    }
  }
  return r;
}

// Row by row (one position of one head), ‖got − want‖₂ <= 2% of ‖want‖₂ plus 0.2% of the largest
// row's norm: bf16 rounding of the outputs and of P and dS costs a few tenths of a percent, a wrong
// fragment, mask or scale whole percents of some row.
void expect_rows_near(const std::vector<float>& got, const std::vector<double>& want, std::int64_t width,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const std::size_t w = static_cast<std::size_t>(width);
  std::vector<double> want_norm(want.size() / w);
  std::vector<double> error_norm(want.size() / w);
  for (std::size_t i = 0; i < want.size(); ++i) {
    want_norm[i / w] += want[i] * want[i];
    const double error = static_cast<double>(got[i]) - want[i];
    error_norm[i / w] += error * error;
  }
  const double largest = std::sqrt(*std::max_element(want_norm.begin(), want_norm.end()));
  int reported = 0;
  for (std::size_t r = 0; r < want_norm.size(); ++r) {
    const double bound = 0.02 * std::sqrt(want_norm[r]) + 0.002 * largest;
    if (std::sqrt(error_norm[r]) > bound && reported++ < 5) {
      ADD_FAILURE() << what << " row " << r << ": error " << std::sqrt(error_norm[r]) << " > " << bound;
    }
  }
}

std::string describe(const FlashAttentionProblem& p) {
  return "seq " + std::to_string(p.seq) + " head_dim " + std::to_string(p.head_dim) + (p.causal ? " causal" : " full") +
         " window " + std::to_string(p.window);
}

// Full attention, causal, and causal windows narrower than a tile and wider than one.
constexpr std::pair<bool, std::int64_t> kMasks[] = {{false, 0}, {true, 0}, {true, 5}, {true, 66}};

TEST(FlashAttentionGpu, ForwardAndBackwardMatchTheHostReference) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  for (const std::int64_t head_dim : {64, 128}) {
    for (const std::int64_t seq : {1, 17, 128, 200}) {
      for (const auto& [causal, window] : kMasks) {
        const FlashAttentionProblem p = problem(3, seq, head_dim, causal, window);
        const std::string what = describe(p);
        const auto count = static_cast<std::size_t>(3 * seq * head_dim);
        FlashAttentionHostTensors in;
        in.q = random_tensor(count, 1);
        in.k = random_tensor(count, 2);
        in.v = random_tensor(count, 3);
        in.d_o = random_tensor(count, 4);
        FlashAttentionRunner runner({p});
        runner.upload_inputs(p, in);
        runner.forward(p, nullptr);
        runner.backward(p, nullptr);
        const FlashAttentionHostTensors out = runner.download(p);
        const Reference want = reference(p, in);
        expect_rows_near(out.o, want.o, head_dim, what + ": O");
        expect_rows_near(out.dq, want.dq, head_dim, what + ": dQ");
        expect_rows_near(out.dk, want.dk, head_dim, what + ": dK");
        expect_rows_near(out.dv, want.dv, head_dim, what + ": dV");
        ASSERT_EQ(out.lse.size(), want.lse.size());
        for (std::size_t i = 0; i < want.lse.size(); ++i) {
          ASSERT_NEAR(static_cast<double>(out.lse[i]), want.lse[i], 1e-3) << what << ": L row " << i;
        }
      }
    }
  }
}

TEST(FlashAttentionGpu, ForwardAndKeyGradientsAreDeterministic) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  const FlashAttentionProblem p = problem(3, 200, 128, true, 66);
  FlashAttentionRunner runner({p});
  runner.forward(p, nullptr);
  runner.backward(p, nullptr);
  const FlashAttentionHostTensors first = runner.download(p);
  runner.forward(p, nullptr);
  runner.backward(p, nullptr);
  const FlashAttentionHostTensors second = runner.download(p);
  EXPECT_EQ(first.o, second.o);
  EXPECT_EQ(first.lse, second.lse);
  EXPECT_EQ(first.dk, second.dk);
  EXPECT_EQ(first.dv, second.dv);
}

TEST(FlashAttentionGpu, AnArenaLargerThanTheGpuIsADeviceMemoryError) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  // 2^31 − 2^17 rows of 128: about 512 GiB per tensor.
  const FlashAttentionProblem huge = problem((std::int64_t{1} << 14) - 1, std::int64_t{1} << 17, 128, true);
  try {
    FlashAttentionRunner runner({huge});
    ADD_FAILURE() << "an arena of " << runner.arena_bytes() << " bytes fitted";
  } catch (const CudaError& e) {  // DeviceMemoryError (device_memory.h, private to the backend)
    EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos) << e.what();
  }
  // The failed allocation leaves the device usable.
  const FlashAttentionProblem small = problem(1, 64, 64, true);
  FlashAttentionRunner runner({small});
  EXPECT_EQ(runner.arena_bytes(), FlashAttentionRunner::arena_bytes_for(small));
  runner.forward(small, nullptr);
  EXPECT_EQ(runner.download(small).lse.size(), 64u);
}

}  // namespace
}  // namespace megasim::backend::cuda
