// Public defaults of the compute cost model, and their sources. Every number here is either a
// datasheet or published measurement, or a stated assumption that a calibration file replaces.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/compute_cost.h"

#include <cmath>
#include "sim/error.h"

namespace megasim::models {
namespace {

struct ArchDefaults {
  std::int64_t sm_count;
  double flash_forward;
  double flash_backward;
};

// SM counts: NVIDIA A100 whitepaper (108 SMs on A100 SXM; the A800 is the same GA100 with less
// NVLink, gpu_spec.cc) and H100 whitepaper (132 SMs on H100 SXM5; H200 and H800 SXM use the same
// GH100 configuration). FlashAttention runs inside one GPU, so the A100's figures below hold for the
// A800.
// FlashAttention-2 on A100 (Dao 2023, arXiv 2307.08691): 50-73% of peak forward, up to ~63%
// backward, the maxima at long sequences; for s = 2k, head dim 128 we assume 65% / 55%.
// On Hopper FA2 does not use the new tensor-core instructions: the FlashAttention-3 paper
// (Shah et al. 2024) reports FA2 at about 35% of H100 peak; backward assumed 30%.
ArchDefaults arch_defaults(const GpuSpec& gpu) {
  const std::string_view name = gpu.name;
  for (std::string_view ampere : {"A100", "A800"}) {
    if (name.find(ampere) != std::string_view::npos) return {108, 0.65, 0.55};
  }
  for (std::string_view hopper : {"H100", "H200", "H800"}) {
    if (name.find(hopper) != std::string_view::npos) return {132, 0.35, 0.30};
  }
  throw sim::ConfigError("cluster.gpu", gpu.name,
                         "an A100, A800, H100, H200 or H800 variant for the default compute calibration");
}

// When gpus.csv has no measured best GEMM (H800), use the lowest measured value among the GPUs that
// have one (H100/H200 SXM: 0.803, same GH100 die as H800).
constexpr double kUnknownBestGemmEfficiency = 0.803;

// Tile efficiencies. A CTA computing a tm × tn tile streams (tm + tn)·2 bytes of operands from L2
// through shared memory per k step for 2·tm·tn FLOPs: intensity tm·tn/(tm + tn) FLOP/byte. The
// best cuBLAS/CUTLASS bf16 kernels on Ampere and Hopper run 128×128 or larger tiles, so a tile
// reaches the large-GEMM efficiency at intensity >= that of 128×128 (64) and scales with intensity
// below it. Assumption: bandwidth into the SM is what limits small tiles. The skinny 16- and 32-wide
// tiles (the tensor-core MMA is 16 rows tall) serve GEMMs with a small m or n.
std::vector<GemmTile> default_tiles() {
  const auto intensity = [](std::int64_t tm, std::int64_t tn) {
    return static_cast<double>(tm * tn) / static_cast<double>(tm + tn);
  };
  const double reference = intensity(128, 128);
  std::vector<GemmTile> tiles;
  constexpr std::array<std::pair<std::int64_t, std::int64_t>, 10> kShapes{
      {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}, {128, 32}, {32, 128}, {128, 16}, {16, 128}}};
  for (const auto& [tm, tn] : kShapes) {
    const double rel = std::min(1.0, intensity(tm, tn) / reference);
    tiles.push_back(GemmTile{tm, tn, rel});
  }
  return tiles;
}

// FlashAttention-1 (flash-attn 1.x) against FlashAttention-2, same GPU, same shape. The FA2 paper
// (Dao 2023, arXiv 2307.08691, abstract and section 4) says FA1 reaches only 25-40% of the A100's
// peak and FA2 is about 2x faster (1.7-3.0x in its benchmarks, 50-73% of peak forward). FA1 =
// FA2 / 2 applied to the A100 defaults above gives 32.5% forward and 27.5% backward, both inside
// the stated 25-40%. Hopper: no public FA1 measurement is used here; FA1, like FA2, runs the Ampere
// mma.sync code there, and we assume the same 2x ratio (17.5% / 15% of H100 peak).
constexpr double kFlash2OverFlash1Speed = 2.0;
constexpr std::int64_t kMaxHostTimeNs = 1'000'000'000;  // a host stall per call beyond 1 s is no longer overhead

void require(bool ok, std::string_view field, double value, std::string_view valid) {
  if (!ok)
    throw sim::ConfigError("calibration.compute." + std::string(field), fmt::format("{}", value), std::string(valid));
}

}  // namespace

ComputeCalibration default_compute_calibration(const GpuSpec& gpu) {
  const ArchDefaults arch = arch_defaults(gpu);
  ComputeCalibration c;
  c.best_gemm_efficiency = gpu.best_gemm_efficiency > 0 ? gpu.best_gemm_efficiency : kUnknownBestGemmEfficiency;
  c.sm_count = arch.sm_count;
  c.gemm_tiles = default_tiles();
  // The epilogue writes the tm × tn bf16 tile; at the SM's share of HBM bandwidth that takes as long
  // as (peak / bandwidth) k steps of the main loop (2·tm·tn FLOPs each at the SM's share of peak):
  // the ridge point in FLOP/byte. Ampere kernels do not overlap it with the next tile; we assume the
  // same on Hopper.
  c.gemm_k_overhead = gpu.peak_bf16_dense_tflops / gpu.hbm_tbytes_per_s;
  // STREAM-like kernels reach about 88-90% of the A100 80GB datasheet bandwidth (1.80 of 2.04 TB/s,
  // NVIDIA developer forum "Trouble to reach peak bandwidth of A100", citing a GTC talk where the best
  // kernel reached ~90%); framework elementwise kernels mixing reads and writes sit a little lower.
  // Assumption: 0.85 on every GPU.
  c.memory_efficiency = 0.85;
  c.flash_attention_forward_efficiency = arch.flash_forward;
  c.flash_attention_backward_efficiency = arch.flash_backward;
  c.flash_attention_1_forward_efficiency = arch.flash_forward / kFlash2OverFlash1Speed;
  c.flash_attention_1_backward_efficiency = arch.flash_backward / kFlash2OverFlash1Speed;
  // Assumption: 4 µs per kernel, the launch latency and inter-kernel gap of an eager PyTorch stream
  // (commonly 3-5 µs in Nsight Systems traces); replace with a measured value.
  c.launch_overhead_ns = 4'000;
  // Assumption: 50 µs from a torch.cuda.synchronize() to the next kernel: the Python between the
  // synchronize's return and the first launch in Megatron-LM's schedule (the rest of _communicate,
  // the schedule's bookkeeping, forward_step or the autograd engine's start, the module wrappers
  // down to the first op), a few PyTorch op dispatches of about 5-25 µs each on the CPU; replace
  // with a measured value.
  c.host_sync_gap_ns = 50'000;
  // Assumption: 0.5 ms of host time per synchronous get_batch. Megatron-LM's batch-generator timer
  // (get_batch) reads 5.24 ms per iteration in a public BERT log (NVIDIA/nccl issue 743) whose
  // get_batch broadcasts six tensors; GPT's broadcasts one.
  c.get_batch_host_ns = 500'000;
  // NCCL runs an intra-server collective on about two channels per NVLink of the GPU, at most 32
  // (NCCL_MAX_NCHANNELS), each channel one CTA on its own SM: 24 channels on an HGX A100's 12 links
  // (NCCL log in NVIDIA/nccl-tests issue 100), 16 on H800's 8 (NVIDIA/nccl issue 892), 32 on
  // H100/H200's 18 (NVIDIA/nccl issue 1429: the channel count follows the GPU's NVLinks). NVLink 3
  // and 4 links move 50 GB/s both ways, so links = nvlink_total_gbytes_per_s / 50: the A800's
  // 400 GB/s is 8 links and 16 channels by the same rule (no NCCL log of an A800 checked).
  const double nvlinks = gpu.nvlink_total_gbytes_per_s / 50.0;
  const double channels = std::min(32.0, 2.0 * nvlinks);
  c.comm_sm_fraction = std::min(channels, static_cast<double>(c.sm_count)) / static_cast<double>(c.sm_count);
  return c;
}

void validate(const ComputeCalibration& calib) {
  require(calib.best_gemm_efficiency > 0 && calib.best_gemm_efficiency <= 1, "best_gemm_efficiency",
          calib.best_gemm_efficiency, "in (0, 1]");
  require(calib.sm_count >= 1, "sm_count", static_cast<double>(calib.sm_count), "an integer >= 1");
  if (calib.gemm_tiles.empty()) throw sim::ConfigError("calibration.compute.gemm_tiles", "[]", "at least one tile");
  for (const GemmTile& t : calib.gemm_tiles) {
    require(t.m >= 1 && t.n >= 1, "gemm_tiles", static_cast<double>(t.m * t.n), "tiles with m, n >= 1");
    require(t.relative_efficiency > 0 && t.relative_efficiency <= 1, "gemm_tiles", t.relative_efficiency,
            "relative_efficiency in (0, 1]");
  }
  require(calib.gemm_k_overhead >= 0, "gemm_k_overhead", calib.gemm_k_overhead, ">= 0");
  for (const GemmPoint& p : calib.gemm_points) {
    require(p.m >= 1 && p.n >= 1 && p.k >= 1, "gemm_points", static_cast<double>(p.m * p.n * p.k),
            "points with m, n, k >= 1");
    require(p.efficiency > 0 && p.efficiency <= 1, "gemm_points", p.efficiency, "efficiency in (0, 1]");
  }
  require(calib.memory_efficiency > 0 && calib.memory_efficiency <= 1, "memory_efficiency", calib.memory_efficiency,
          "in (0, 1]");
  for (const MemoryPoint& p : calib.memory_points) {
    require(p.bytes > 0 && std::isfinite(p.bytes), "memory_points", p.bytes, "points with bytes > 0");
    require(p.efficiency > 0 && p.efficiency <= 1, "memory_points", p.efficiency, "efficiency in (0, 1]");
  }
  require(calib.flash_attention_forward_efficiency > 0 && calib.flash_attention_forward_efficiency <= 1,
          "flash_attention_forward_efficiency", calib.flash_attention_forward_efficiency, "in (0, 1]");
  require(calib.flash_attention_backward_efficiency > 0 && calib.flash_attention_backward_efficiency <= 1,
          "flash_attention_backward_efficiency", calib.flash_attention_backward_efficiency, "in (0, 1]");
  require(calib.flash_attention_1_forward_efficiency > 0 && calib.flash_attention_1_forward_efficiency <= 1,
          "flash_attention_1_forward_efficiency", calib.flash_attention_1_forward_efficiency, "in (0, 1]");
  require(calib.flash_attention_1_backward_efficiency > 0 && calib.flash_attention_1_backward_efficiency <= 1,
          "flash_attention_1_backward_efficiency", calib.flash_attention_1_backward_efficiency, "in (0, 1]");
  require(calib.comm_sm_fraction >= 0 && calib.comm_sm_fraction < 1, "comm_sm_fraction", calib.comm_sm_fraction,
          "in [0, 1)");
  // The curve times the scale stays a fraction of the FP8 peak: at most 1 / best_gemm_efficiency.
  require(calib.fp8_gemm_efficiency_scale > 0 && calib.fp8_gemm_efficiency_scale * calib.best_gemm_efficiency <= 1,
          "fp8_gemm_efficiency_scale", calib.fp8_gemm_efficiency_scale,
          "in (0, 1 / best_gemm_efficiency]: FP8 GEMMs at most at the FP8 peak");
  require(calib.launch_overhead_ns >= 0, "launch_overhead_ns", static_cast<double>(calib.launch_overhead_ns), ">= 0");
  require(calib.host_sync_gap_ns >= 0 && calib.host_sync_gap_ns <= kMaxHostTimeNs, "host_sync_gap_ns",
          static_cast<double>(calib.host_sync_gap_ns), "in [0, 1 s]");
  require(calib.get_batch_host_ns >= 0 && calib.get_batch_host_ns <= kMaxHostTimeNs, "get_batch_host_ns",
          static_cast<double>(calib.get_batch_host_ns), "in [0, 1 s]");
}

}  // namespace megasim::models
