// MegaScale's data-parallel all-reduce: 12,288 GPUs on the default Clos (MegaScale's fabric), the
// Megatron plan tp=8 pp=8, so 64 DP groups of 192 ranks (one GPU per server in each, the same rail),
// every group all-reducing at once with ring + ECMP. Sizes: 1 GiB, and the whole bf16 gradient of a
// rank of a 175B model, 175e9 / (8 x 8) params x 2 bytes = 5.47e9 bytes.
// Counters: sim_time_s (slowest group), slowest_busbw_gbytes_per_s, flows, peak_rss_mb (VmHWM of the
// process, which includes the topology build).
// Run: build-dir/bench/bench_dp_allreduce
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backend/sim/collective_runner.h"
#include "models/collective.h"
#include "models/parallel_groups.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace {

namespace backend = megasim::backend;
namespace models = megasim::models;
namespace topo = megasim::topo;

constexpr std::int64_t kGpus = 12'288;

struct DpCase {
  topo::Topology topology;
  std::vector<backend::CollectiveJob> jobs;
};

DpCase make_case(double bytes, const models::CollectiveParams& params) {
  topo::ClusterParams cluster;
  cluster.gpus = kGpus;
  DpCase c{topo::Topology::build(cluster), {}};
  const topo::Placement placement = topo::contiguous_placement(c.topology, kGpus);
  const models::ParallelLayout layout = models::make_layout(kGpus, 8, 8);
  for (const auto& ranks : models::groups(layout, models::GroupKind::kData)) {
    backend::CollectiveJob& job = c.jobs.emplace_back();
    for (const std::int64_t r : ranks) job.members.push_back(placement[static_cast<std::size_t>(r)]);
    job.plan = std::make_shared<const models::CollectivePlan>(
        models::plan_collective(models::CollectiveOp::kAllReduce, models::CollectiveAlgorithm::kRing, bytes,
                                backend::servers_of(c.topology, job.members), params));
  }
  return c;
}

void BM_DpAllReduce12288(benchmark::State& state) {
  const double bytes = state.range(0) == 0 ? 1024.0 * 1024 * 1024 : 175e9 / 64 * 2;
  const models::CollectiveParams params;
  const DpCase c = make_case(bytes, params);
  const backend::FabricParams fabric;  // ecmp, crc32, 1 QP per connection
  std::vector<backend::CollectiveResult> results;
  for (auto _ : state) {
    results = backend::run_concurrently(c.topology, fabric, params, c.jobs);
    benchmark::DoNotOptimize(results.data());
  }
  const auto slowest = std::max_element(results.begin(), results.end(),
                                        [](const auto& a, const auto& b) { return a.time_s < b.time_s; });
  state.counters["bytes"] = bytes;
  state.counters["groups"] = static_cast<double>(c.jobs.size());
  state.counters["group_size"] = static_cast<double>(c.jobs.front().members.size());
  state.counters["sim_time_s"] = slowest->time_s;
  state.counters["slowest_busbw_gbytes_per_s"] = slowest->busbw_gbytes_per_s;
  state.counters["peak_rss_mb"] = megasim::bench::peak_rss_mb();
}
BENCHMARK(BM_DpAllReduce12288)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
