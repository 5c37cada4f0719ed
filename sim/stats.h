// Small statistics helpers for reports and tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace megasim::sim {

// Arithmetic mean; 0 for an empty sample.
double mean(std::span<const double> xs);
// Sample standard deviation (n-1 denominator); 0 for fewer than two values.
double stddev(std::span<const double> xs);
// Percentile p in [0, 100] with linear interpolation between closest ranks (numpy's default).
// Precondition: xs is not empty.
double percentile(std::span<const double> xs, double p);

// Welford's one-pass mean and variance, for streams too long to keep.
class RunningStats {
 public:
  void add(double x);
  [[nodiscard]] std::int64_t count() const { return n_; }
  [[nodiscard]] double mean() const { return mean_; }
  [[nodiscard]] double variance() const { return n_ > 1 ? m2_ / static_cast<double>(n_ - 1) : 0.0; }
  [[nodiscard]] double min() const { return min_; }
  [[nodiscard]] double max() const { return max_; }

 private:
  std::int64_t n_ = 0;
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;
};

// Fixed-width histogram over [lo, hi); values outside land in underflow/overflow counters.
class Histogram {
 public:
  Histogram(double lo, double hi, int bins);
  void add(double x);
  [[nodiscard]] const std::vector<std::int64_t>& counts() const { return counts_; }
  [[nodiscard]] std::int64_t underflow() const { return underflow_; }
  [[nodiscard]] std::int64_t overflow() const { return overflow_; }
  [[nodiscard]] double bin_lower_edge(int bin) const { return lo_ + width_ * bin; }
  [[nodiscard]] double bin_width() const { return width_; }

 private:
  double lo_, width_;
  std::vector<std::int64_t> counts_;
  std::int64_t underflow_ = 0, overflow_ = 0;
};

}  // namespace megasim::sim
