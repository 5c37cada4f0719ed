// Where a process of a multi-process job sits, from what its launcher put in the environment, so
// that a real backend started by mpirun, srun or a torchrun-style launcher knows its rank, the job's
// size and which of the node's GPUs is its own (DESIGN.md "Real backends": one process per GPU).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace megasim::backend {

struct LaunchedRank {
  int rank = 0;
  int size = 1;
  int local_rank = -1;   // the process's index among the job's processes on this node; -1: not given
  std::string launcher;  // "Open MPI", "Slurm", "MPICH/PMI", "RANK/WORLD_SIZE"
};

// Reads a variable: its value, or std::nullopt when unset (tests pass their own).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process environment (getenv).
EnvLookup process_environment();

// The first launcher whose rank and size variables are both set, in this order:
//   Open MPI            OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   Slurm (srun)        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
//   MPICH/PMI (Hydra)   PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
//   RANK/WORLD_SIZE     RANK, WORLD_SIZE, LOCAL_RANK (torchrun's names)
// std::nullopt when none is (a process started on its own). Throws sim::ConfigError naming the
// variable when a value is not an integer, the size is < 1, or a rank is outside [0, size).
std::optional<LaunchedRank> launched_rank(const EnvLookup& env = process_environment());

// The GPU ordinal a rank uses on its node: local_rank, or rank modulo `gpus` when the launcher gave
// no local rank. Throws sim::ConfigError("cluster.gpus") when local_rank >= gpus (more processes on
// this node than visible GPUs: NCCL refuses two ranks on one GPU) or gpus < 1.
int gpu_of(const LaunchedRank& rank, int gpus);

}  // namespace megasim::backend
