// The cuda backend's job: one process per GPU, each on its own GPU with the NCCL communicators of
// its rank, started here under mpirun when the command was run on its own (a plan of up to this
// machine's GPU count; a one-GPU plan runs in this process, without MPI), or by the user's launcher:
// mpirun or srun (rank 0's NCCL id is broadcast with MPI), or a torchrun-style launcher setting RANK
// and WORLD_SIZE (rank 0's id reaches the others through the caller's SharedFileExchange). Behind
// the Backend interface (backend/backend.h) as make_cuda_backend().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/launch_env.h"

namespace megasim::backend::cuda {

// One process of a job of GPU processes: its place in the job, its GPU (already current), and how
// rank 0's NCCL unique id reaches it.
struct CudaJobRank {
  LaunchedRank me;
  int gpu = 0;
  IdBroadcast broadcast;
};

// Runs `body` on every rank of a job of `processes` GPU processes (header comment). `key` names what
// set `processes` in errors (a job of another size, more processes than visible GPUs, no GPU at all:
// "--backend"). Errors on any rank end the whole job (mpi::run_as_mpi_job).
void run_cuda_job(std::int64_t processes, const std::string& key, const mpi::CommandLine& relaunch,
                  const SharedFileExchange& file_exchange, const std::function<void(const CudaJobRank&)>& body);

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace megasim::backend::cuda
