#include "backend/cuda/nccl_collectives.h"

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/nccl_check.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kElementBytes = 2;  // bf16

}  // namespace

CollectiveSize collective_size(models::CollectiveOp op, double bytes, int ranks) {
  if (ranks < 1) throw CudaError("a collective over " + std::to_string(ranks) + " ranks");
  const auto n = static_cast<std::size_t>(ranks);
  // Elements per rank, at least one: the whole buffer is n times that.
  const std::size_t per_rank =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(std::max(0.0, bytes) / kElementBytes)) / n);
  CollectiveSize size;
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      size.count = per_rank * n;
      size.input_bytes = size.output_bytes = size.count * kElementBytes;
      return size;
    case models::CollectiveOp::kReduceScatter:
      size.count = per_rank;
      size.input_bytes = per_rank * n * kElementBytes;
      size.output_bytes = per_rank * kElementBytes;
      return size;
    case models::CollectiveOp::kAllGather:
      size.count = per_rank;
      size.input_bytes = per_rank * kElementBytes;
      size.output_bytes = per_rank * n * kElementBytes;
      return size;
    default:
      throw CudaError("the cuda backend runs no " + std::string(models::to_string(op)) + " collective");
  }
}

void enqueue_collective(models::CollectiveOp op, const CollectiveSize& size, ncclComm_t comm, const void* input,
                        void* output, cudaStream_t stream, const std::string& what) {
  ncclResult_t status = ncclSuccess;
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      status = nccl().all_reduce(input, output, size.count, ncclBfloat16, ncclSum, comm, stream);
      break;
    case models::CollectiveOp::kReduceScatter:
      status = nccl().reduce_scatter(input, output, size.count, ncclBfloat16, ncclSum, comm, stream);
      break;
    case models::CollectiveOp::kAllGather:
      status = nccl().all_gather(input, output, size.count, ncclBfloat16, comm, stream);
      break;
    default:
      throw CudaError(what + ": the cuda backend runs no " + std::string(models::to_string(op)) + " collective");
  }
  check_nccl(status, what + ": nccl " + std::string(models::to_string(op)), comm);
}

}  // namespace megasim::backend::cuda
