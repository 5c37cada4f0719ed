// `megasim run --samples N`: how sure a prediction is. The scenario's iteration simulated N times,
// each sample with its own simulation seed, so with its own draw of everything the seed decides:
// the ECMP hash seed (which flows collide), the slow hosts, the jitter and sequence-length draws and
// the garbage-collection phases of [stragglers] (straggler_draw.h). Sample 0 is the scenario's own
// seed, so the report's headline is sample 0's iteration. Nothing else changes between samples:
// without [stragglers] the spread is that of the ECMP collisions alone.
#pragma once

#include <cstdint>
#include <functional>

#include "scenarios/config/resolved_scenario.h"
#include "scenarios/config/scenario.h"
#include "scenarios/report/sample_report.h"
#include "scenarios/studies/run_study.h"

namespace megasim::scenarios {

// The seed of sample `index` of a scenario seeded `seed`: `seed` itself for sample 0, else the
// "run.sample <index>" stream of it (sim::RngStreams), independent of every other stream.
std::uint64_t sample_seed(std::uint64_t seed, std::int64_t index);

// Runs samples 1 .. samples - 1 (without the straggler what-ifs: only the iteration time and MFU
// are kept) and summarises them with sample 0, `first` (run_iteration_study of `scenario` itself).
// `progress`, when set, is called after each sample with the samples done and the total.
// Throws sim::ConfigError("--samples", ...) unless 1 <= samples <= kMaxSamples.
using SampleProgress = std::function<void(std::int64_t done, std::int64_t total)>;
SampleReport run_samples_study(const ResolvedScenario& scenario, std::int64_t samples, const RunResult& first,
                               const SampleProgress& progress = {});
// The same, resolving the scenario first (and throwing as resolve does).
SampleReport run_samples_study(const Scenario& scenario, std::int64_t samples, const RunResult& first,
                               const SampleProgress& progress = {});

}  // namespace megasim::scenarios
