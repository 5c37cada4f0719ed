// The cuda backend's whole-plan mode from the command line: one process per GPU, each on its own
// GPU with the NCCL communicators of its rank, started here under mpirun when the command was run
// on its own (a plan of up to this machine's GPU count; a one-GPU plan runs in this process, without
// MPI), or by the user's launcher: mpirun or srun
// (rank 0's NCCL id is broadcast with MPI), or a torchrun-style launcher setting RANK and
// WORLD_SIZE (rank 0 writes the id to the shared file $MEGASIM_NCCL_ID_FILE, the others read it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/launch_env.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::cli {

// One process of a job of GPU processes: its place in the job, its GPU (already current), and how
// rank 0's NCCL unique id reaches it.
struct CudaJobRank {
  backend::LaunchedRank me;
  int gpu = 0;
  backend::cuda::IdBroadcast broadcast;
};

// Runs `body` on every rank of a job of `processes` GPU processes: started here under mpirun when
// the command was run on its own (all on this machine's GPUs), or by the user's launcher (header
// comment). `key` names what set `processes` in errors (a job of another size, more processes than
// visible GPUs). Errors on any rank end the whole job (as run_as_mpi_job does).
void run_cuda_job(std::int64_t processes, const std::string& key, const std::function<void(const CudaJobRank&)>& body);

// Runs the workload's measured iterations on every rank of the job and calls `on_rank_zero` with
// them on world rank 0. Errors on any rank end the whole job (as run_as_mpi_job does).
void run_cuda_plan(const models::Workload& workload, const backend::cuda::CudaRunOptions& options,
                   const std::function<void(const std::vector<backend::Trace>&)>& on_rank_zero);

}  // namespace megasim::cli
