#include "backend/cuda/cuda_job.h"

#include <mpi.h>

#include <optional>
#include <span>
#include <utility>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_probe.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/shard_runner.h"
#include "backend/mpi/mpi_job.h"
#include "backend/mpi/mpi_session.h"
#include "backend/real_backend_scope.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

// The job's ranks on this machine must each have a GPU: a job started here has all of them here.
void require_local_gpus(std::int64_t processes, const std::string& key) {
  const auto gpus = static_cast<std::int64_t>(visible_gpus().size());
  if (gpus == 0) throw sim::ConfigError("--backend", "cuda", "a machine with a visible CUDA GPU (none found)");
  if (processes > gpus) {
    throw sim::ConfigError(key, std::to_string(processes),
                           "at most " + std::to_string(gpus) +
                               " (the GPUs visible on this machine) for a job started here; start larger plans "
                               "with mpirun or srun across machines, one process per GPU");
  }
}

IdBroadcast file_broadcast(const SharedFileExchange& exchange, int rank) {
  if (!exchange) {
    throw sim::ConfigError("RANK", std::to_string(rank),
                           "a job started with mpirun or srun (this command has no shared file for the NCCL id)");
  }
  return [exchange, rank](NcclId& id) { exchange(rank, std::span<char>(id.data(), id.size())); };
}

IdBroadcast mpi_broadcast() {
  return [](NcclId& id) {
    mpi::check_mpi(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD),
                   "MPI_Bcast (NCCL unique id)");
  };
}

class CudaJobBackend final : public Backend {
 public:
  [[nodiscard]] BackendId id() const override { return BackendId::kCuda; }

  void require_machine() const override {
    if (visible_gpus().empty()) {
      throw sim::ConfigError("--backend", "cuda", "a machine with a visible CUDA GPU (none found)");
    }
  }

  void probe_gpu(const ProbeOptions& options, const std::function<void(const GpuProbe&)>& on_rank_zero) const override {
    run_gpu_probe(options, on_rank_zero);
  }

  [[nodiscard]] std::vector<Trace> run_stage(const models::Workload& workload, std::int64_t stage, int warmup,
                                             int iterations) const override {
    require_real_backend_kernels(workload, "cuda");  // its GEMMs would time BF16 for FP8 ones
    ShardRunner shard(workload, stage);
    return shard.run(warmup, iterations);
  }

  void run(const models::Workload& workload, const MeasureOptions& options,
           const std::function<void(const std::vector<Trace>&)>& on_rank_zero) const override {
    MEGASIM_ASSERT(!options.probe_before_iteration, "the cuda backend runs nothing between its iterations");
    require_real_backend_groups(workload, "cuda");  // before any process starts
    CudaRunOptions run;
    run.warmup_iterations = options.warmup_iterations;
    run.iterations = options.iterations;
    run.timeout = options.timeout;
    run_cuda_job(workload.plan.world_size, "cluster.gpus", options.relaunch, options.file_exchange,
                 [&](const CudaJobRank& rank) {
                   NcclComms comms(workload.plan.layout(), rank.me.rank, rank.me.size, rank.broadcast);
                   const std::vector<Trace> traces = run_cuda_iterations(workload, comms, run);
                   if (rank.me.rank == 0) on_rank_zero(traces);
                 });
  }
};

}  // namespace

void run_cuda_job(std::int64_t processes, const std::string& key, const mpi::CommandLine& relaunch,
                  const SharedFileExchange& file_exchange, const std::function<void(const CudaJobRank&)>& body) {
  const std::optional<LaunchedRank> launched = launched_rank();
  auto run_rank = [&](const LaunchedRank& me, IdBroadcast broadcast) {
    CudaJobRank rank{me, 0, std::move(broadcast)};
    rank.gpu = gpu_of(me, static_cast<int>(visible_gpus().size()));
    use_gpu(rank.gpu);
    body(rank);
  };
  if (launched && launched->launcher == "RANK/WORLD_SIZE") {
    // No MPI: a torchrun-style launcher started every process.
    if (launched->size != processes) {
      throw sim::ConfigError(key, std::to_string(processes),
                             "the job's WORLD_SIZE (" + std::to_string(launched->size) + ")");
    }
    run_rank(*launched, file_broadcast(file_exchange, launched->rank));
    return;
  }
  if (!launched) require_local_gpus(processes, key);
  if (!launched && processes == 1) {
    // One process started here: no launcher and no MPI (a GPU host need not have Open MPI's
    // runtime); the only rank keeps its own NCCL id.
    LaunchedRank me;
    me.local_rank = 0;
    run_rank(me, [](NcclId&) {});
    return;
  }
  mpi::run_as_mpi_job(processes, relaunch, [&](int rank) {
    LaunchedRank me = launched.value_or(LaunchedRank{});
    if (!launched) {  // started here (or a one-rank job): every rank on this machine
      me.size = static_cast<int>(processes);
      me.local_rank = rank;
    }
    me.rank = rank;
    run_rank(me, mpi_broadcast());
  });
}

std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<CudaJobBackend>();
}

}  // namespace megasim::backend::cuda
