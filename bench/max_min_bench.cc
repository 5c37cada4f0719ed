// Max-min recomputation cost on Clos-like problems: flows of 6 links (NIC up, ToR up, agg up, agg
// down, ToR down, NIC down) between random GPUs of a 8,192-GPU fabric with 49,152 links.
// Run: build-dir/bench/bench_max_min [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>

#include <cstdint>

#include "backend/sim/max_min.h"
#include "sim/rng.h"

namespace {

using megasim::backend::MaxMinProblem;

constexpr std::uint32_t kGpus = 8192;
constexpr std::uint32_t kGpusPerTor = 32;
constexpr std::uint32_t kUplinks = 32;  // per ToR and per aggregation switch
constexpr std::uint32_t kTors = kGpus / kGpusPerTor;
constexpr std::uint32_t kAggs = kTors;
constexpr double kNicBytesPerS = 200e9 / 8 * 0.96;
constexpr double kSwitchBytesPerS = 400e9 / 8 * 0.96;

MaxMinProblem clos_problem(std::int64_t flows, std::uint64_t seed) {
  megasim::sim::Rng rng(seed);
  MaxMinProblem p;
  // Links: [nic up | nic down | tor up | agg->tor down | agg up | core->agg down].
  const std::uint32_t nic_up = 0, nic_down = kGpus, tor_up = 2 * kGpus, tor_down = tor_up + kTors * kUplinks;
  const std::uint32_t agg_up = tor_down + kTors * kUplinks, agg_down = agg_up + kAggs * kUplinks;
  for (std::uint32_t l = 0; l < 2 * kGpus; ++l) p.add_link(kNicBytesPerS);
  for (std::uint32_t l = 0; l < 4 * kTors * kUplinks; ++l) p.add_link(kSwitchBytesPerS);
  auto pick = [&](std::uint32_t n) { return static_cast<std::uint32_t>(rng.uniform_int(n)); };
  for (std::int64_t f = 0; f < flows; ++f) {
    const std::uint32_t src = pick(kGpus), dst = pick(kGpus);
    const std::uint32_t src_tor = src / kGpusPerTor, dst_tor = dst / kGpusPerTor;
    p.add_usage(nic_up + src, 1.0);
    p.add_usage(tor_up + src_tor * kUplinks + pick(kUplinks), 1.0);
    p.add_usage(agg_up + pick(kAggs) * kUplinks + pick(kUplinks), 1.0);
    p.add_usage(agg_down + pick(kAggs) * kUplinks + pick(kUplinks), 1.0);
    p.add_usage(tor_down + dst_tor * kUplinks + pick(kUplinks), 1.0);
    p.add_usage(nic_down + dst, 1.0);
    p.end_flow();
  }
  return p;
}

void BM_MaxMinSolve(benchmark::State& state) {
  const MaxMinProblem problem = clos_problem(state.range(0), 42);
  megasim::backend::MaxMinSolver solver;
  std::vector<double> rates;
  for (auto _ : state) {
    solver.solve(problem, rates);
    benchmark::DoNotOptimize(rates.data());
  }
  state.counters["flows"] = static_cast<double>(problem.num_flows());
  state.counters["links"] = static_cast<double>(problem.num_links());
  state.counters["solves_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flows_per_s"] =
      benchmark::Counter(static_cast<double>(problem.num_flows()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MaxMinSolve)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
