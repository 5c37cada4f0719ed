// How the cost of one iteration grows with the cluster (issue 30's first target): MegaScale's 175B
// with all its optimisations (scenarios/megascale/175b_megascale.toml, TP 8 x PP 8, ideal cluster)
// at a fixed 32 micro-batches per replica (global batch 32 x DP), so that the work per GPU is the
// same at every size. Each run simulates 12,288 GPUs and then N, alternating within the run, and
// reports the wall-time ratio, its exponent log(ratio) / log(N / 12,288) (1: linear; the target is
// <= 1.05) and the same ratios of simulator events, fabric flows and rate solves: when the work
// counts grow linearly and the time does not, each event costs more at scale.
// Run: build/bench/bench_growth [--benchmark_filter=.../24576]
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <chrono>
#include <cmath>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"

namespace {

constexpr std::int64_t kBase = 12288;
constexpr std::int64_t kMicrobatchesPerReplica = 32;
constexpr std::int64_t kGpusPerReplica = 64;  // TP 8 x PP 8

megasim::scenarios::Scenario fixed_work_scenario(std::int64_t gpus) {
  megasim::scenarios::Scenario s = megasim::scenarios::load_scenario_file(std::string(MEGASIM_SOURCE_DIR) +
                                                                          "/scenarios/megascale/175b_megascale.toml");
  s.cluster.gpus = gpus;
  s.stragglers.enabled = false;
  s.plan.global_batch_size = kMicrobatchesPerReplica * gpus / kGpusPerReplica;
  return s;
}

struct Measured {
  double wall_s = 0;
  megasim::backend::IterationStats stats;
};

Measured measure(const megasim::scenarios::Scenario& s) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = megasim::scenarios::run_iteration_study(s);
  Measured m;
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.stats = result.stats;
  return m;
}

double ratio(std::uint64_t large, std::uint64_t small) {
  return small == 0 ? 0.0 : static_cast<double>(large) / static_cast<double>(small);
}

void BM_Growth175bFixedWork(benchmark::State& state) {
  const std::int64_t gpus = state.range(0);
  const megasim::scenarios::Scenario base = fixed_work_scenario(kBase);
  const megasim::scenarios::Scenario large = fixed_work_scenario(gpus);
  Measured small_run, large_run;
  for (auto _ : state) {
    small_run = measure(base);
    large_run = measure(large);
  }
  const double scale = static_cast<double>(gpus) / static_cast<double>(kBase);
  const double time_ratio = large_run.wall_s / small_run.wall_s;
  state.counters["base_wall_s"] = small_run.wall_s;
  state.counters["wall_s"] = large_run.wall_s;
  state.counters["time_ratio"] = time_ratio;
  state.counters["exponent"] = std::log(time_ratio) / std::log(scale);
  state.counters["events_ratio"] = ratio(large_run.stats.events, small_run.stats.events);
  state.counters["flows_ratio"] = ratio(large_run.stats.flows, small_run.stats.flows);
  state.counters["solves_ratio"] = ratio(large_run.stats.rate_recomputations, small_run.stats.rate_recomputations);
  state.counters["rounds_ratio"] = ratio(large_run.stats.region_rounds, small_run.stats.region_rounds);
  state.counters["peak_rss_mb"] = megasim::bench::peak_rss_mb();
}
BENCHMARK(BM_Growth175bFixedWork)
    ->Arg(24576)
    ->Arg(49152)
    ->Arg(98304)  // the target's size: minutes here
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
