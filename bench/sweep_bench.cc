// `megasim sweep` of MegaScale's 175B model (scenarios/megascale/175b_megascale.toml): every plan of
// TP x PP x virtual stages x micro-batch on 12,288 GPUs (global batch 6,144) and on 1,024 (batch
// 768), each accepted plan simulated in full (run_iteration_study). The enumeration-only case
// measures Megatron's validation and the memory estimate over every candidate. Counters: candidates,
// simulated, out of memory, invalid, the best plan's tokens/s and MFU, host seconds per simulated
// plan (wall time x threads / plans), and the process's peak RSS. The CPU column counts the main
// thread only.
// Run: build/bench/bench_sweep [--benchmark_filter=Sweep175b/1024]
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <algorithm>
#include <string>
#include <thread>

#include "scenarios/loader.h"
#include "scenarios/sweep_study.h"

namespace {

megasim::scenarios::Scenario scenario_at(std::int64_t gpus) {
  megasim::scenarios::Scenario s = megasim::scenarios::load_scenario_file(std::string(MEGASIM_SOURCE_DIR) +
                                                                          "/scenarios/megascale/175b_megascale.toml");
  s.cluster.gpus = gpus;
  s.plan.global_batch_size = gpus <= 1024 ? 768 : 6144;  // the paper's two strong-scaling batches
  return s;
}

void count(benchmark::State& state, const megasim::scenarios::SweepReport& r, unsigned threads) {
  state.counters["candidates"] = static_cast<double>(r.rows.size());
  state.counters["simulated"] = static_cast<double>(r.simulated);
  state.counters["out_of_memory"] = static_cast<double>(r.out_of_memory);
  state.counters["invalid"] = static_cast<double>(r.invalid);
  if (r.simulated > 0) {
    state.counters["best_tokens_per_s"] = r.rows.front().tokens_per_s;
    state.counters["best_mfu"] = r.rows.front().mfu;
    state.counters["host_s_per_plan"] = r.wall_time_s * threads / static_cast<double>(r.simulated);
  }
  state.counters["peak_rss_mb"] = megasim::bench::peak_rss_mb();
}

// Arguments: GPUs, threads (0: one per hardware thread).
void BM_Sweep175b(benchmark::State& state) {
  const megasim::scenarios::Scenario s = scenario_at(state.range(0));
  const unsigned threads =
      state.range(1) > 0 ? static_cast<unsigned>(state.range(1)) : std::max(1u, std::thread::hardware_concurrency());
  megasim::scenarios::SweepReport r;
  for (auto _ : state) r = megasim::scenarios::run_sweep_study(s, {}, threads);
  count(state, r, threads);
}
BENCHMARK(BM_Sweep175b)->Args({1024, 0})->Args({12288, 0})->Iterations(1)->Unit(benchmark::kSecond);

void BM_SweepEnumerate175b(benchmark::State& state) {
  const megasim::scenarios::Scenario s = scenario_at(state.range(0));
  std::size_t candidates = 0;
  for (auto _ : state) candidates = megasim::scenarios::enumerate_sweep(s, {}).size();
  state.counters["candidates"] = static_cast<double>(candidates);
}
BENCHMARK(BM_SweepEnumerate175b)->Arg(12288)->Unit(benchmark::kMillisecond);

}  // namespace
