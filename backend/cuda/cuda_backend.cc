#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/nccl_check.h"
#include "backend/cuda/rank_executor.h"
#include "backend/measured_trace.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr std::size_t kWordsPerRecord = 4;  // TaskRecord: four int64 values
static_assert(sizeof(TaskRecord) == kWordsPerRecord * sizeof(std::int64_t));

// Every rank's records of one iteration on every rank: each rank's list padded to the longest stage
// program and all-gathered as int64 over the world communicator.
class RecordGather {
 public:
  RecordGather(const models::Workload& workload, NcclComms& comms)
      : workload_(workload),
        comms_(comms),
        slots_(longest_program(workload)),
        ranks_(static_cast<std::size_t>(workload.plan.world_size)),
        mine_(slots_ * kWordsPerRecord * sizeof(std::int64_t), "task records"),
        all_(ranks_ * slots_ * kWordsPerRecord * sizeof(std::int64_t), "gathered task records") {}

  std::vector<std::vector<TaskRecord>> gather(const std::vector<TaskRecord>& records) {
    std::vector<TaskRecord> padded(slots_);
    std::copy(records.begin(), records.end(), padded.begin());
    check(cudaMemcpyAsync(mine_.get(), padded.data(), mine_.bytes(), cudaMemcpyHostToDevice, stream_.get()),
          "cudaMemcpyAsync (task records)");
    check_nccl(
        nccl().all_gather(mine_.get(), all_.get(), slots_ * kWordsPerRecord, ncclInt64, comms_.world(), stream_.get()),
        "rank " + std::to_string(comms_.rank()) + ": ncclAllGather (task records)", comms_.world());
    std::vector<TaskRecord> host(ranks_ * slots_);
    check(cudaMemcpyAsync(host.data(), all_.get(), all_.bytes(), cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpyAsync (gathered task records)");
    check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (task records)");
    const models::ParallelLayout layout = workload_.plan.layout();
    std::vector<std::vector<TaskRecord>> out(ranks_);
    for (std::size_t r = 0; r < ranks_; ++r) {
      const std::size_t tasks =
          workload_.stages[static_cast<std::size_t>(layout.pp_rank(static_cast<std::int64_t>(r)))].tasks.size();
      const auto first = host.begin() + static_cast<std::ptrdiff_t>(r * slots_);
      out[r].assign(first, first + static_cast<std::ptrdiff_t>(tasks));
    }
    return out;
  }

 private:
  static std::size_t longest_program(const models::Workload& w) {
    std::size_t n = 1;
    for (const models::StageProgram& stage : w.stages) n = std::max(n, stage.tasks.size());
    return n;
  }

  const models::Workload& workload_;
  NcclComms& comms_;
  std::size_t slots_;
  std::size_t ranks_;
  Stream stream_;
  DeviceBuffer mine_;
  DeviceBuffer all_;
};

}  // namespace

std::vector<Trace> run_cuda_iterations(const models::Workload& workload, NcclComms& comms,
                                       const CudaRunOptions& options) {
  if (options.warmup_iterations < 0 || options.iterations < 1) {
    throw sim::ConfigError("--iterations", std::to_string(options.iterations), "at least 1 (and warm-up >= 0)");
  }
  CudaRankExecutor executor(workload, comms, options.timeout);
  RecordGather gather(workload, comms);
  for (int i = 0; i < options.warmup_iterations; ++i) executor.run_iteration();
  std::vector<Trace> traces;
  for (int i = 0; i < options.iterations; ++i) {
    std::vector<std::vector<TaskRecord>> all = gather.gather(executor.run_iteration());
    if (comms.rank() == 0) traces.push_back(measured_trace(workload, "cuda", std::move(all)));
  }
  return traces;
}

}  // namespace megasim::backend::cuda
