#include "scenarios/studies/samples_study.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>

#include "sim/error.h"
#include "sim/rng.h"
#include "topology/topology.h"

namespace megasim::scenarios {
namespace {

SampleSpread spread_of(const std::vector<double>& values) {
  return {.median = sample_quantile(values, 0.5),
          .p5 = sample_quantile(values, 0.05),
          .p95 = sample_quantile(values, 0.95)};
}

}  // namespace

std::uint64_t sample_seed(std::uint64_t seed, std::int64_t index) {
  if (index == 0) return seed;
  return sim::RngStreams(seed).stream_seed(fmt::format("run.sample {}", index));
}

SampleReport run_samples_study(const Scenario& scenario, std::int64_t samples, const RunResult& first,
                               const SampleProgress& progress) {
  return run_samples_study(resolve(scenario), samples, first, progress);
}

// The seed decides no part of the resolved scenario (its device, plan and memory): each sample is
// the resolved scenario with its seed replaced.
SampleReport run_samples_study(const ResolvedScenario& resolved, std::int64_t samples, const RunResult& first,
                               const SampleProgress& progress) {
  const Scenario& scenario = resolved.scenario;
  if (samples < 1 || samples > kMaxSamples) {
    throw sim::ConfigError("--samples", std::to_string(samples),
                           fmt::format("a whole number of simulations from 1 to {}", kMaxSamples));
  }
  SampleReport out;
  out.seeds.push_back(scenario.seed);
  out.iteration_time_s.push_back(first.report.iteration_time_s);
  out.mfu.push_back(first.report.mfu);
  RunOptions options;
  options.straggler_whatifs = false;
  if (samples > 1)
    options.topology = std::make_shared<const topo::Topology>(topo::Topology::build(resolved.device.cluster));
  for (std::int64_t i = 1; i < samples; ++i) {
    ResolvedScenario sample = resolved;
    sample.scenario.seed = sample_seed(scenario.seed, i);
    const RunResult run = run_iteration_study(sample, options);
    out.seeds.push_back(sample.scenario.seed);
    out.iteration_time_s.push_back(run.report.iteration_time_s);
    out.mfu.push_back(run.report.mfu);
    if (progress) progress(i + 1, samples);
  }
  out.iteration_time = spread_of(out.iteration_time_s);
  out.mfu_spread = spread_of(out.mfu);
  return out;
}

}  // namespace megasim::scenarios
