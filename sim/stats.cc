#include "sim/stats.h"

#include <algorithm>
#include <cmath>

#include "sim/error.h"

namespace megasim::sim {

double mean(std::span<const double> xs) {
  if (xs.empty()) return 0.0;
  double sum = 0;
  for (const double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

double stddev(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  const double m = mean(xs);
  double sq = 0;
  for (const double x : xs) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(xs.size() - 1));
}

double percentile(std::span<const double> xs, double p) {
  MEGASIM_ASSERT(!xs.empty(), "percentile of an empty sample");
  MEGASIM_ASSERT(p >= 0 && p <= 100, "percentile outside [0, 100]");
  std::vector<double> sorted(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

void RunningStats::add(double x) {
  ++n_;
  if (n_ == 1) {
    min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

Histogram::Histogram(double lo, double hi, int bins)
    : lo_(lo), width_((hi - lo) / bins), counts_(static_cast<std::size_t>(bins), 0) {
  MEGASIM_ASSERT(bins > 0 && hi > lo, "histogram needs hi > lo and at least one bin");
}

void Histogram::add(double x) {
  if (x < lo_) {
    ++underflow_;
    return;
  }
  const auto bin = static_cast<std::size_t>((x - lo_) / width_);
  if (bin >= counts_.size()) {
    ++overflow_;
    return;
  }
  ++counts_[bin];
}

}  // namespace megasim::sim
