// The cuda backend's whole-plan mode from the command line: one process per GPU, each on its own
// GPU with the NCCL communicators of its rank, started here under mpirun when the command was run
// on its own (a plan of up to this machine's GPU count), or by the user's launcher: mpirun or srun
// (rank 0's NCCL id is broadcast with MPI), or a torchrun-style launcher setting RANK and
// WORLD_SIZE (rank 0 writes the id to the shared file $MEGASIM_NCCL_ID_FILE, the others read it).
#pragma once

#include <functional>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::cli {

// Runs the workload's measured iterations on every rank of the job and calls `on_rank_zero` with
// them on world rank 0. Errors on any rank end the whole job (as run_as_mpi_job does).
void run_cuda_plan(const models::Workload& workload, const backend::cuda::CudaRunOptions& options,
                   const std::function<void(const std::vector<backend::Trace>&)>& on_rank_zero);

}  // namespace megasim::cli
