// Memory-bound and launch measurements on the current GPU: what the cost model's
// memory_efficiency and per-kernel overhead describe (models/compute_cost.h).
#pragma once

#include <cstddef>

namespace megasim::backend::cuda {

// HBM bytes read plus written per second by a 16-byte-vector copy of `buffer_bytes` into a second
// buffer: the median of `repetitions` timed copies after two warm-ups (throws CudaError).
double copy_bandwidth_bytes_per_s(std::size_t buffer_bytes, int repetitions);

// Seconds per kernel of `kernels` empty kernels queued back to back on one stream, timed on the GPU
// (launch latency once the queue is full, plus the gap between kernels).
double back_to_back_kernel_seconds(int kernels);

}  // namespace megasim::backend::cuda
