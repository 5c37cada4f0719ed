// `megasim sweep` of MegaScale's 175B model (scenarios/megascale/175b_megascale.toml): every plan of
// TP x PP x virtual stages x micro-batch on 12,288 GPUs (global batch 6,144) and on 1,024 (batch
// 768), each accepted plan screened and the top 10 confirmed in full (the default), or each simulated
// in full (confirm 0); and the two against each other. The enumeration-only case measures Megatron's
// validation and the memory estimate over every candidate. Counters: candidates, simulated in full,
// screened, out of memory, invalid, the best plan's tokens/s and MFU, host seconds per accepted plan
// (wall time x threads / plans), and the process's peak RSS. The CPU column counts the main thread
// only. BM_SweepConfirmedAgainstFull175b/12288 simulates every plan in full: about 8 minutes here.
// Run: build/bench/bench_sweep [--benchmark_filter=Sweep175b/1024]
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/sweep/sweep_study.h"

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
  state.counters["screened"] = static_cast<double>(r.screened);
  state.counters["out_of_memory"] = static_cast<double>(r.out_of_memory);
  state.counters["invalid"] = static_cast<double>(r.invalid);
  state.counters["bound_violations"] = static_cast<double>(r.bound_violations);
  if (r.simulated > 0) {
    state.counters["best_tokens_per_s"] = r.rows.front().tokens_per_s;
    state.counters["best_mfu"] = r.rows.front().mfu;
    state.counters["host_s_per_plan"] =
        r.wall_time_s * threads / static_cast<double>(r.simulated + r.screened);  // screened or simulated
  }
  state.counters["peak_rss_mb"] = megasim::bench::peak_rss_mb();
}

unsigned threads_of(const benchmark::State& state) {
  return state.range(1) > 0 ? static_cast<unsigned>(state.range(1)) : std::max(1u, std::thread::hardware_concurrency());
}

megasim::scenarios::SweepOptions confirming(std::int64_t confirm_top) {
  megasim::scenarios::SweepOptions o;
  o.confirm_top = static_cast<std::size_t>(confirm_top);
  return o;
}

// Issue 30's sweep target: the whole 12,288-GPU sweep (top 10 confirmed, one thread per hardware
// thread) against one iteration of its scenario (TP 8 x PP 8, 6 chunks, batch 6,144, without the
// straggler what-ifs), timed in one run, the iteration first. Target: sweep_over_iteration <= 12.
void BM_SweepOverIteration175b(benchmark::State& state) {
  const megasim::scenarios::Scenario s = scenario_at(12288);
  megasim::scenarios::RunOptions iteration;
  iteration.straggler_whatifs = false;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  double iteration_s = 0;
  double sweep_s = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(megasim::scenarios::run_iteration_study(s, iteration).report.iteration_time_s);
    iteration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sweep_s = megasim::scenarios::run_sweep_study(s, confirming(10), threads).wall_time_s;
  }
  state.counters["iteration_wall_s"] = iteration_s;
  state.counters["sweep_wall_s"] = sweep_s;
  state.counters["sweep_over_iteration"] = sweep_s / iteration_s;
  state.counters["threads"] = threads;
}
BENCHMARK(BM_SweepOverIteration175b)->Iterations(1)->Unit(benchmark::kSecond);

// Arguments: GPUs, threads (0: one per hardware thread), plans confirmed in full (0: every plan in
// full, no screen).
void BM_Sweep175b(benchmark::State& state) {
  const megasim::scenarios::Scenario s = scenario_at(state.range(0));
  const unsigned threads = threads_of(state);
  megasim::scenarios::SweepReport r;
  for (auto _ : state) r = megasim::scenarios::run_sweep_study(s, confirming(state.range(2)), threads);
  count(state, r, threads);
}
BENCHMARK(BM_Sweep175b)
    ->Args({1024, 0, 10})
    ->Args({1024, 0, 0})
    ->Args({12288, 0, 10})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// The screen against the full simulation on every plan (arguments: GPUs, threads): the sweep that
// confirms the top 10 and the one that simulates every plan in full, in one run. Counters: their
// wall-time ratio (full / confirmed), whether the confirmed top 10 equal the full sweep's (plans and
// tokens/s, 1 or 0), and over every accepted plan the largest and smallest screen / full - 1 (the
// bound holds where the smallest is >= 0).
void BM_SweepConfirmedAgainstFull175b(benchmark::State& state) {
  namespace sc = megasim::scenarios;
  const sc::Scenario s = scenario_at(state.range(0));
  const unsigned threads = threads_of(state);
  sc::SweepReport confirmed, full;
  for (auto _ : state) {
    confirmed = sc::run_sweep_study(s, confirming(10), threads);
    full = sc::run_sweep_study(s, confirming(0), threads);
  }
  bool top_equal = confirmed.simulated >= 10;
  for (std::size_t i = 0; i < 10 && top_equal; ++i) {
    top_equal = !sc::key_less(confirmed.rows[i].candidate, full.rows[i].candidate) &&
                !sc::key_less(full.rows[i].candidate, confirmed.rows[i].candidate) &&
                confirmed.rows[i].tokens_per_s == full.rows[i].tokens_per_s;
  }
  double largest = -1, smallest = 1;
  for (const sc::SweepRow& c : confirmed.rows) {
    if (c.screen_tokens_per_s <= 0) continue;
    for (const sc::SweepRow& f : full.rows) {
      if (f.candidate.status != sc::SweepStatus::kSimulated || sc::key_less(c.candidate, f.candidate) ||
          sc::key_less(f.candidate, c.candidate)) {
        continue;
      }
      largest = std::max(largest, c.screen_tokens_per_s / f.tokens_per_s - 1);
      smallest = std::min(smallest, c.screen_tokens_per_s / f.tokens_per_s - 1);
    }
  }
  state.counters["full_over_confirmed_wall"] = full.wall_time_s / confirmed.wall_time_s;
  state.counters["confirmed_wall_s"] = confirmed.wall_time_s;
  state.counters["full_wall_s"] = full.wall_time_s;
  state.counters["simulated_in_full"] = static_cast<double>(confirmed.simulated);
  state.counters["top10_equal"] = top_equal ? 1 : 0;
  state.counters["largest_screen_excess"] = largest;
  state.counters["smallest_screen_excess"] = smallest;
}
BENCHMARK(BM_SweepConfirmedAgainstFull175b)->Args({1024, 0})->Args({12288, 0})->Iterations(1)->Unit(benchmark::kSecond);

void BM_SweepEnumerate175b(benchmark::State& state) {
  const megasim::scenarios::Scenario s = scenario_at(state.range(0));
  std::size_t candidates = 0;
  for (auto _ : state) candidates = megasim::scenarios::enumerate_sweep(s, {}).size();
  state.counters["candidates"] = static_cast<double>(candidates);
}
BENCHMARK(BM_SweepEnumerate175b)->Arg(12288)->Unit(benchmark::kMillisecond);

}  // namespace
