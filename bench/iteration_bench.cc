// One training iteration of MegaScale's 175B model with all of its optimisations
// (scenarios/megascale/175b_megascale.toml), simulated rank by rank with every PP and DP flow on the
// Clos, at the paper's strong-scaling sizes and at 98,304 GPUs (8x the paper's largest, the nearest
// valid size to 100,000). Counters: the simulated iteration time and MFU, the peak RSS of the
// process, simulator events, fabric flows and rate solves (and how many solved only a region).
// Run: build/bench/bench_iteration [--benchmark_filter=.../12288]
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <fstream>
#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"

namespace {

megasim::scenarios::Scenario scenario_at(std::int64_t gpus) {
  megasim::scenarios::Scenario s = megasim::scenarios::load_scenario_file(std::string(MEGASIM_SOURCE_DIR) +
                                                                          "/scenarios/megascale/175b_megascale.toml");
  s.cluster.gpus = gpus;
  // One simulation of the ideal cluster: the production profile's straggler what-ifs are three more.
  s.stragglers.enabled = false;
  // The paper's two strong-scaling batches; beyond its largest run (12,288 GPUs) the batch keeps 8
  // micro-batches per replica (Megatron's interleaved schedule needs a multiple of PP).
  s.plan.global_batch_size = gpus <= 1024 ? 768 : gpus <= 12288 ? 6144 : gpus / 8;
  return s;
}

void run_and_count(benchmark::State& state, const megasim::scenarios::Scenario& s) {
  double iteration_s = 0, mfu = 0;
  megasim::backend::IterationStats stats;
  for (auto _ : state) {
    const auto result = megasim::scenarios::run_iteration_study(s);
    iteration_s = result.report.iteration_time_s;
    mfu = result.report.mfu;
    stats = result.stats;
  }
  state.counters["events"] = static_cast<double>(stats.events);
  state.counters["flows"] = static_cast<double>(stats.flows);
  state.counters["solves"] = static_cast<double>(stats.rate_recomputations);
  state.counters["region_solves"] = static_cast<double>(stats.region_recomputations);
  state.counters["region_rounds"] = static_cast<double>(stats.region_rounds);
  state.counters["sim_iteration_s"] = iteration_s;
  state.counters["mfu"] = mfu;
  state.counters["peak_rss_mb"] = megasim::bench::peak_rss_mb();
}

void BM_Iteration175bMegaScale(benchmark::State& state) {
  run_and_count(state, scenario_at(state.range(0)));
}
BENCHMARK(BM_Iteration175bMegaScale)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(3072)
    ->Arg(12288)
    ->Arg(98304)  // ~100,000: minutes, run it with --benchmark_filter=.../98304
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// The reference for the region solve: the same iteration re-solving the whole connected component
// at every change (FabricParams::region_solve = false); same report, so the ratio of the two wall
// times is what the region solve buys.
void BM_Iteration175bComponentSolve(benchmark::State& state) {
  megasim::scenarios::Scenario s = scenario_at(state.range(0));
  s.fabric.region_solve = false;
  run_and_count(state, s);
}
BENCHMARK(BM_Iteration175bComponentSolve)->Arg(3072)->Arg(12288)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
