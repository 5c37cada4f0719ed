// The plan's collectives as NCCL calls, sized as nccl-tests sizes them (models/collective.h): a
// call's `bytes` is the whole buffer, the input of a reduce-scatter and the output of an all-gather,
// moved as bf16 elements (bytes / 2), summed in bf16 where the collective reduces.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "models/collective.h"

namespace megasim::backend::cuda {

struct CollectiveSize {
  std::size_t input_bytes = 0;
  std::size_t output_bytes = 0;
  std::size_t count = 0;  // NCCL's count argument: elements per rank (reduce-scatter: of the output,
                          // all-gather: of the input, all-reduce: of the buffer)
};

// The buffers and count of `op` over a group of `ranks` for an nccl-tests size of `bytes` (at least
// one element per rank). Throws CudaError for an op the plan's collectives do not use (broadcast,
// all-to-all, send/recv) or ranks < 1.
CollectiveSize collective_size(models::CollectiveOp op, double bytes, int ranks);

// Enqueues the collective on `stream` over `comm` with the caller's device buffers (at least
// collective_size's bytes each). `what` names the call in errors ("rank 3, task 17 (dp
// reduce_scatter)").
void enqueue_collective(models::CollectiveOp op, const CollectiveSize& size, ncclComm_t comm, const void* input,
                        void* output, cudaStream_t stream, const std::string& what);

}  // namespace megasim::backend::cuda
