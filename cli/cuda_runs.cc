#include "cli/cuda_runs.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <utility>

#include "backend/cuda/device_info.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/launch_env.h"
#include "backend/mpi/mpi_session.h"
#include "cli/cpu_runs.h"
#include "scenarios/input_file.h"
#include "scenarios/output_files.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

constexpr auto kIdFileWait = std::chrono::seconds(120);

// The job's ranks on this machine must each have a GPU: a job started here has all of them here.
void require_local_gpus(std::int64_t processes, const std::string& key) {
  const auto gpus = static_cast<std::int64_t>(backend::cuda::visible_gpus().size());
  if (gpus == 0) throw sim::ConfigError("--backend", "cuda", "a machine with a visible CUDA GPU (none found)");
  if (processes > gpus) {
    throw sim::ConfigError(key, std::to_string(processes),
                           "at most " + std::to_string(gpus) +
                               " (the GPUs visible on this machine) for a job started here; start larger plans "
                               "with mpirun or srun across machines, one process per GPU");
  }
}

// Rank 0 writes the id to `path` (scenarios/output_files.h: a temporary renamed, so readers never see
// half of it; a FIFO, device or folder there is refused); the others wait for the file and read it as
// an input file (scenarios/input_file.h: never blocking on a FIFO).
backend::cuda::IdBroadcast file_broadcast(int rank) {
  const char* path = std::getenv("MEGASIM_NCCL_ID_FILE");  // NOLINT(concurrency-mt-unsafe)
  if (path == nullptr || *path == '\0') {
    throw sim::ConfigError("MEGASIM_NCCL_ID_FILE", "",
                           "a file path on a filesystem every rank shares (launched with RANK/WORLD_SIZE, rank 0 "
                           "writes the NCCL id there), or start the job with mpirun or srun");
  }
  const std::string file = path;
  return [file, rank](backend::cuda::NcclId& id) {
    if (rank == 0) {
      scenarios::write_output_file(file, std::string_view(id.data(), id.size()), "MEGASIM_NCCL_ID_FILE");
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + kIdFileWait;
    while (true) {
      std::error_code ec;
      if (std::filesystem::exists(file, ec)) {
        const std::string text = scenarios::read_input_file(file, "MEGASIM_NCCL_ID_FILE",
                                                            "a file rank 0 writes the NCCL id into", id.size());
        if (text.size() == id.size()) {
          std::copy(text.begin(), text.end(), id.begin());
          return;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw sim::ConfigError("MEGASIM_NCCL_ID_FILE", file, "a file rank 0 writes within 120 s (none appeared)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
}

backend::cuda::IdBroadcast mpi_broadcast() {
  return [](backend::cuda::NcclId& id) {
    backend::mpi::check_mpi(MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD),
                            "MPI_Bcast (NCCL unique id)");
  };
}

}  // namespace

void run_cuda_job(std::int64_t processes, const std::string& key, const std::function<void(const CudaJobRank&)>& body) {
  const std::optional<backend::LaunchedRank> launched = backend::launched_rank();
  auto run_rank = [&](const backend::LaunchedRank& me, backend::cuda::IdBroadcast broadcast) {
    CudaJobRank rank{me, 0, std::move(broadcast)};
    rank.gpu = backend::gpu_of(me, static_cast<int>(backend::cuda::visible_gpus().size()));
    backend::cuda::use_gpu(rank.gpu);
    body(rank);
  };
  if (launched && launched->launcher == "RANK/WORLD_SIZE") {
    // No MPI: a torchrun-style launcher started every process.
    if (launched->size != processes) {
      throw sim::ConfigError(key, std::to_string(processes),
                             "the job's WORLD_SIZE (" + std::to_string(launched->size) + ")");
    }
    run_rank(*launched, file_broadcast(launched->rank));
    return;
  }
  if (!launched) require_local_gpus(processes, key);
  if (!launched && processes == 1) {
    // One process started here: no launcher and no MPI (a GPU host need not have Open MPI's
    // runtime); the only rank keeps its own NCCL id.
    backend::LaunchedRank me;
    me.local_rank = 0;
    run_rank(me, [](backend::cuda::NcclId&) {});
    return;
  }
  run_as_mpi_job(processes, [&](int rank) {
    backend::LaunchedRank me = launched.value_or(backend::LaunchedRank{});
    if (!launched) {  // started here (or a one-rank job): every rank on this machine
      me.size = static_cast<int>(processes);
      me.local_rank = rank;
    }
    me.rank = rank;
    run_rank(me, mpi_broadcast());
  });
}

void run_cuda_plan(const models::Workload& workload, const backend::cuda::CudaRunOptions& options,
                   const std::function<void(const std::vector<backend::Trace>&)>& on_rank_zero) {
  run_cuda_job(workload.plan.world_size, "cluster.gpus", [&](const CudaJobRank& rank) {
    backend::cuda::NcclComms comms(workload.plan.layout(), rank.me.rank, rank.me.size, rank.broadcast);
    const std::vector<backend::Trace> traces = backend::cuda::run_cuda_iterations(workload, comms, options);
    if (rank.me.rank == 0) on_rank_zero(traces);
  });
}

}  // namespace megasim::cli
