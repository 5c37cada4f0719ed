// The cuda backend's entry point for a whole plan: every process of the job (one per GPU) plays its
// rank's share of the workload (rank_executor.h) and rank 0 assembles the measured iterations as
// backend::Trace, the type the simulator fills (DESIGN.md "One data flow"). The records are
// gathered over the world NCCL communicator, so the backend needs no MPI.
#pragma once

#include <chrono>
#include <vector>

#include "backend/cuda/nccl_comms.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend::cuda {

struct CudaRunOptions {
  int warmup_iterations = 1;  // run first and discarded (cuBLASLt's and NCCL's first-use setup)
  int iterations = 3;         // measured
  // An iteration running longer than this (or an NCCL asynchronous error) aborts the communicators
  // and fails the run with the rank and the task that stalled.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
};

// Every rank calls it together, on its own GPU, with its communicators. On world rank 0: one Trace
// per measured iteration (backend "cuda", backend/measured_trace.h's conventions); elsewhere an
// empty vector. Throws sim::ConfigError("--iterations") for iterations < 1 or warm-up < 0 (before
// any collective call), CudaError for CUDA/NCCL failures and stalls.
std::vector<Trace> run_cuda_iterations(const models::Workload& workload, NcclComms& comms,
                                       const CudaRunOptions& options);

}  // namespace megasim::backend::cuda
