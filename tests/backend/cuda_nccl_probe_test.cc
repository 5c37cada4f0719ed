// The NCCL link probe (backend/cuda/nccl_probe.h): its sizes and options without a GPU, the
// nccl-tests bandwidth arithmetic, and, where GPUs are visible, a measurement by ranks played by
// threads of this process (one GPU each) that every rank must see the same.
#include "backend/cuda/nccl_probe.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/device_info.h"
#include "backend/cuda/nccl_comms.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr double kKiB = 1024;
constexpr double kMiB = 1024 * kKiB;
constexpr double kGiB = 1024 * kMiB;

std::string thrown_key(const NcclProbeOptions& o) {
  try {
    validate(o);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "(no error)";
}

TEST(NcclProbe, SizesGrowByFourFromEightKibToTheCap) {
  const std::vector<double> sizes = probe_sizes(NcclProbeOptions{});
  // 8 KiB x 4^k up to 512 MiB, then the 1 GiB cap itself.
  const std::vector<double> expected = {8 * kKiB, 32 * kKiB, 128 * kKiB, 512 * kKiB, 2 * kMiB,
                                        8 * kMiB, 32 * kMiB, 128 * kMiB, 512 * kMiB, kGiB};
  EXPECT_EQ(sizes, expected);

  NcclProbeOptions capped;
  capped.max_bytes = 2 * kMiB;  // on the x4 grid: not repeated
  EXPECT_EQ(probe_sizes(capped), (std::vector<double>{8 * kKiB, 32 * kKiB, 128 * kKiB, 512 * kKiB, 2 * kMiB}));
  capped.max_bytes = 100 * kKiB;  // off the grid: ends with the cap
  EXPECT_EQ(probe_sizes(capped), (std::vector<double>{8 * kKiB, 32 * kKiB, 100 * kKiB}));
  capped.max_bytes = 8 * kKiB;
  EXPECT_EQ(probe_sizes(capped), (std::vector<double>{8 * kKiB}));
}

TEST(NcclProbe, BadOptionsNameTheirKey) {
  NcclProbeOptions o;
  o.max_bytes = 4 * kKiB;  // below the first size
  EXPECT_EQ(thrown_key(o), "--nccl-max-bytes");
  o = NcclProbeOptions{};
  o.repetitions = 0;
  EXPECT_EQ(thrown_key(o), "--repetitions");
  o = NcclProbeOptions{};
  o.warmup = -1;
  EXPECT_EQ(thrown_key(o), "--warmup");
  o = NcclProbeOptions{};
  o.step = 1;
  EXPECT_EQ(thrown_key(o), "nccl_probe.step");
  EXPECT_EQ(thrown_key(NcclProbeOptions{}), "(no error)");
}

TEST(NcclProbe, AlgbwAndBusbwFollowNcclTests) {
  // 1 GiB all-reduce over 8 ranks in 5 ms: algbw = 2^30 / 5e-3 B/s, busbw x 2(8-1)/8 = 1.75.
  const NcclPoint all_reduce{HostLink::kIntraNode, models::CollectiveOp::kAllReduce, 8, kGiB, 5e-3};
  EXPECT_DOUBLE_EQ(all_reduce.algbw_bytes_per_s(), 214748364800.0);
  EXPECT_DOUBLE_EQ(all_reduce.busbw_bytes_per_s(), 214748364800.0 * 1.75);
  // All-gather and reduce-scatter over 4: (4-1)/4.
  const NcclPoint all_gather{HostLink::kInterNode, models::CollectiveOp::kAllGather, 4, 64 * kMiB, 4e-3};
  EXPECT_DOUBLE_EQ(all_gather.busbw_bytes_per_s(), 64 * kMiB / 4e-3 * 0.75);
  const NcclPoint reduce_scatter{HostLink::kInterNode, models::CollectiveOp::kReduceScatter, 4, 64 * kMiB, 4e-3};
  EXPECT_DOUBLE_EQ(reduce_scatter.busbw_bytes_per_s(), all_gather.busbw_bytes_per_s());
  // The ping-pong: one way, factor 1.
  const NcclPoint ping{HostLink::kIntraNode, models::CollectiveOp::kSendRecv, 2, kMiB, 1e-5};
  EXPECT_DOUBLE_EQ(ping.busbw_bytes_per_s(), ping.algbw_bytes_per_s());
  EXPECT_DOUBLE_EQ(ping.algbw_bytes_per_s(), kMiB / 1e-5);
}

// Every rank measures with `options` on its own GPU; errors per rank ("" when none).
std::vector<std::string> measure_on_threads(int ranks, const NcclProbeOptions& options,
                                            std::vector<NcclProbeResult>& results) {
  std::mutex mutex;
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  results.assign(static_cast<std::size_t>(ranks), NcclProbeResult{});
  std::promise<NcclId> id_promise;
  std::shared_future<NcclId> id_future = id_promise.get_future().share();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (cudaSetDevice(r) != cudaSuccess) throw CudaError("cudaSetDevice");
        NcclComms comms(models::ParallelLayout{1, 1, ranks}, r, ranks, [&](NcclId& id) {
          if (r == 0) {
            id_promise.set_value(id);
          } else {
            id = id_future.get();
          }
        });
        results[static_cast<std::size_t>(r)] = measure_nccl_links(comms.world(), options);
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(mutex);
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

NcclProbeOptions quick() {
  NcclProbeOptions o;
  o.max_bytes = 2 * kMiB;
  o.warmup = 2;
  o.repetitions = 5;
  return o;
}

TEST(NcclProbe, OneGpuJobHasNoLinkToMeasure) {
  if (visible_gpus().empty()) GTEST_SKIP() << "no visible GPU";
  std::vector<NcclProbeResult> results;
  const std::vector<std::string> errors = measure_on_threads(1, quick(), results);
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(results[0].hosts.host_count(), 1);
  EXPECT_EQ(results[0].hosts.ranks_per_host, 1);
  EXPECT_TRUE(results[0].points.empty());
}

TEST(NcclProbe, TwoGpusOfOneHostMeasureTheIntraNodeLinkAlike) {
  if (visible_gpus().size() < 2) GTEST_SKIP() << "fewer than 2 visible GPUs";
  std::vector<NcclProbeResult> results;
  const std::vector<std::string> errors = measure_on_threads(2, quick(), results);
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  const std::size_t sizes = probe_sizes(quick()).size();
  // Three collectives and the ping-pong per size, all intra-node (threads share a host name).
  ASSERT_EQ(results[0].points.size(), 4 * sizes);
  for (const NcclPoint& p : results[0].points) {
    EXPECT_EQ(p.link, HostLink::kIntraNode);
    EXPECT_EQ(p.ranks, 2);
    EXPECT_GT(p.seconds, 0);
  }
  // The slowest rank's time: the same on both ranks.
  ASSERT_EQ(results[1].points.size(), results[0].points.size());
  for (std::size_t i = 0; i < results[0].points.size(); ++i) {
    EXPECT_EQ(results[1].points[i].seconds, results[0].points[i].seconds) << i;
  }
}

}  // namespace
}  // namespace megasim::backend::cuda
