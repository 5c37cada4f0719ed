// Named random streams derived from one master seed (STYLE.md §8). Each component asks for its own
// stream by name ("fabric.qpn", "stragglers.hosts"), so adding draws in one component never shifts
// the numbers another one sees. The generator (xoshiro256**) and every distribution are written
// here rather than taken from <random>, whose distributions differ between standard libraries:
// the same seed must give bit-identical results everywhere.
#pragma once

#include <cstdint>
#include <string_view>

namespace megasim::sim {

// SplitMix64 step: a strong 64-bit mixer, also used to expand seeds.
std::uint64_t splitmix64(std::uint64_t& state);
// FNV-1a 64-bit hash of a name.
std::uint64_t fnv1a64(std::string_view text);

class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform01();
  // Uniform integer in [0, n); n > 0. Lemire's unbiased multiply-and-reject method.
  std::uint64_t uniform_int(std::uint64_t n);
  // Exponential with the given mean (> 0).
  double exponential(double mean);
  // Normal by the Box–Muller transform (both values used in turn).
  double normal(double mean, double stddev);
  // Log-normal whose underlying normal has parameters mu, sigma.
  double lognormal(double mu, double sigma);

 private:
  std::uint64_t s_[4];
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

class RngStreams {
 public:
  explicit RngStreams(std::uint64_t master_seed) : master_seed_(master_seed) {}
  // A fresh generator for the named stream; the same name always gives the same sequence.
  [[nodiscard]] Rng stream(std::string_view name) const;
  // The 64-bit seed of the named stream, for components that derive several values from it.
  [[nodiscard]] std::uint64_t stream_seed(std::string_view name) const;
  [[nodiscard]] std::uint64_t master_seed() const { return master_seed_; }

 private:
  std::uint64_t master_seed_;
};

}  // namespace megasim::sim
