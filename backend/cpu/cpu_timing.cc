#include "backend/cpu/cpu_timing.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "models/layer_ops.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the checksum, hence every kernel run, alive whatever the optimiser (and LTO) can see.
volatile double checksum_sink = 0;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds of one run of `op`: one untimed warm-up run (page faults, caches), then `repetitions`
// timed runs, each repeating the op until it lasts at least min_run_s and divided by the count;
// the median of those. The clock is read after batches of doubling size, so that reading it costs
// little even for the 64-byte op.
double median_run_s(const models::LayerOp& op, const TimingOptions& options) {
  MEGASIM_ASSERT(options.repetitions >= 1, "TimingOptions::repetitions must be at least 1");
  MEGASIM_ASSERT(options.min_run_s >= 0, "TimingOptions::min_run_s must not be negative");
  CpuKernels kernels(std::span<const models::LayerOp>(&op, 1));
  kernels.run(op, false);

  std::vector<double> per_run_s;
  per_run_s.reserve(static_cast<std::size_t>(options.repetitions));
  for (int rep = 0; rep < options.repetitions; ++rep) {
    std::int64_t runs = 0;
    std::int64_t batch = 1;
    double elapsed_s = 0;
    const Clock::time_point start = Clock::now();
    while (true) {
      for (std::int64_t i = 0; i < batch; ++i) kernels.run(op, false);
      runs += batch;
      elapsed_s = seconds_since(start);
      if (elapsed_s >= options.min_run_s) break;
      batch *= 2;
    }
    per_run_s.push_back(elapsed_s / static_cast<double>(runs));
  }
  checksum_sink = kernels.checksum();

  const auto middle = per_run_s.begin() + std::ssize(per_run_s) / 2;
  std::nth_element(per_run_s.begin(), middle, per_run_s.end());
  if (per_run_s.size() % 2 == 1) return *middle;
  return (*middle + *std::max_element(per_run_s.begin(), middle)) / 2;
}

models::LayerOp streaming_op(double bytes) {
  models::LayerOp op;
  op.name = "streaming";
  op.kind = models::OpKind::kElementwise;
  op.bytes = bytes;
  return op;
}

}  // namespace

double time_op_overhead_s(const TimingOptions& options) {
  return median_run_s(streaming_op(64), options);
}

SequenceTimer::SequenceTimer(std::vector<models::LayerOp> sequence)
    : sequence_(std::move(sequence)),
      kernels_(std::make_unique<CpuKernels>(std::span<const models::LayerOp>(sequence_))) {}

SequenceTimer::~SequenceTimer() = default;

std::vector<double> SequenceTimer::time(int passes) {
  MEGASIM_ASSERT(passes >= 1, "SequenceTimer::time needs at least one pass");
  if (!warm_) {
    for (const models::LayerOp& op : sequence_) kernels_->run(op, false);
    warm_ = true;
  }
  std::vector<std::vector<double>> samples(sequence_.size());
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t i = 0; i < sequence_.size(); ++i) {
      const Clock::time_point start = Clock::now();
      kernels_->run(sequence_[i], false);
      samples[i].push_back(seconds_since(start));
    }
  }
  checksum_sink = kernels_->checksum();
  std::vector<double> out;
  out.reserve(sequence_.size());
  for (std::vector<double>& s : samples) {
    std::sort(s.begin(), s.end());
    const std::size_t middle = s.size() / 2;
    out.push_back(s.size() % 2 == 1 ? s[middle] : (s[middle - 1] + s[middle]) / 2);
  }
  return out;
}

}  // namespace megasim::backend::cpu
