// Event-queue throughput: events scheduled, popped and run per second by the Simulator.
// Two shapes: a "hold" model (a steady population of pending events, each event scheduling one
// more at a random future time: the classic priority-queue benchmark of DES kernels) and a burst
// of N events pushed then drained. items_per_second is the events/s figure.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "sim/rng.h"
#include "sim/simulator.h"

namespace megasim::sim {
namespace {

void BM_HoldModel(benchmark::State& state) {
  const auto population = static_cast<std::int64_t>(state.range(0));
  constexpr std::int64_t kEventsPerIteration = 1'000'000;
  for (auto _ : state) {
    Simulator simulator;
    Rng rng(1);
    // Each event reschedules itself while work remains; the capture is two pointers, like the
    // simulator's own callbacks.
    struct Hold {
      Simulator* simulator;
      struct Shared {
        Rng rng{1};
        std::int64_t remaining;
        std::int64_t population;
      } * shared;
      void operator()() const {
        if (--shared->remaining > shared->population) {
          simulator->schedule_after(static_cast<SimTime>(shared->rng.uniform_int(1'000'000)), Hold{*this});
        }
      }
    };
    Hold::Shared shared{Rng(1), kEventsPerIteration, population};
    for (std::int64_t i = 0; i < population; ++i) {
      simulator.schedule_at(static_cast<SimTime>(rng.uniform_int(1'000'000)), Hold{&simulator, &shared});
    }
    simulator.run();
    benchmark::DoNotOptimize(simulator.events_processed());
  }
  state.SetItemsProcessed(state.iterations() * kEventsPerIteration);
}
BENCHMARK(BM_HoldModel)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

// Reference: the same hold model on a bare std::priority_queue of (time, sequence) keys, with no
// callbacks, cancellation or clock: a floor for any heap-based event set on this machine. The
// ratio of BM_HoldModel to this, measured in one run, is the kernel's overhead.
void BM_HoldModelBarePriorityQueue(benchmark::State& state) {
  const auto population = static_cast<std::int64_t>(state.range(0));
  constexpr std::int64_t kEventsPerIteration = 1'000'000;
  using Key = std::pair<SimTime, std::uint64_t>;
  for (auto _ : state) {
    std::priority_queue<Key, std::vector<Key>, std::greater<>> queue;
    Rng rng(1);
    std::uint64_t sequence = 0;
    for (std::int64_t i = 0; i < population; ++i) {
      queue.emplace(static_cast<SimTime>(rng.uniform_int(1'000'000)), sequence++);
    }
    for (std::int64_t remaining = kEventsPerIteration; remaining > 0; --remaining) {
      const SimTime now = queue.top().first;
      queue.pop();
      if (remaining > population) queue.emplace(now + static_cast<SimTime>(rng.uniform_int(1'000'000)), sequence++);
    }
    benchmark::DoNotOptimize(sequence);
  }
  state.SetItemsProcessed(state.iterations() * kEventsPerIteration);
}
BENCHMARK(BM_HoldModelBarePriorityQueue)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_BurstThenDrain(benchmark::State& state) {
  const auto n = static_cast<std::int64_t>(state.range(0));
  for (auto _ : state) {
    Simulator simulator;
    Rng rng(2);
    std::int64_t counter = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      simulator.schedule_at(static_cast<SimTime>(rng.uniform_int(1'000'000'000)), [&counter] { ++counter; });
    }
    simulator.run();
    benchmark::DoNotOptimize(counter);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_BurstThenDrain)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace megasim::sim
