// The spread of an iteration's prediction over independent samples (`megasim run --samples N`,
// samples_study.h): the figures of every sample and their median and 5th-95th percentiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/config/json_writer.h"

namespace megasim::scenarios {

// At most this many samples: each is a whole simulation of the iteration.
inline constexpr std::int64_t kMaxSamples = 10'000;

// The median and the 5th and 95th percentiles of a figure over the samples.
struct SampleSpread {
  double median = 0;
  double p5 = 0;
  double p95 = 0;
};

struct SampleReport {
  std::vector<std::uint64_t> seeds;      // simulation.seed of each sample; seeds[0] = the scenario's
  std::vector<double> iteration_time_s;  // per sample, in sample order
  std::vector<double> mfu;
  SampleSpread iteration_time;
  SampleSpread mfu_spread;
};

// The q-quantile (0 <= q <= 1) of `values` (not empty) by linear interpolation between the order
// statistics at position q * (n - 1): numpy's and pandas' default, so the Python package reads the
// same numbers from the values.
double sample_quantile(std::vector<double> values, double q);

// Text: one line per figure ("over 10 samples: iteration time median 6.31 s, 5-95% 6.28-6.40 s").
std::string to_text(const SampleReport& samples);
// JSON object: count, seeds, iteration_time_s and mfu, each {median, p5, p95, values}.
void write_json(JsonWriter& w, const SampleReport& samples);

}  // namespace megasim::scenarios
