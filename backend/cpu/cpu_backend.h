// The cpu backend's entry point: plays a workload on the processes of this MPI job (one per rank of
// the plan) and returns the measured iterations as backend::Trace, the type the simulator fills
// (DESIGN.md "One data flow"). Requires an mpi::MpiSession in this process.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend::cpu {

struct CpuRunOptions {
  int warmup_iterations = 1;  // run first and discarded (first touches, caches, MPI connections)
  int iterations = 3;         // measured
  // A rank on which no task finishes for this long (a dead peer, a deadlock) fails the run with an
  // MpiError naming what it waited for (cpu_executor.h).
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // Called on every rank before each measured iteration (after the warm-up), with the iteration's
  // index; collective when the caller makes it so (validate's calibration rounds run here, so that
  // they and the iterations they predict see the same machine). Empty: nothing.
  std::function<void(int iteration)> before_iteration = nullptr;
};

// Every process of the job calls it together. On world rank 0: one Trace per measured iteration,
// backend "cpu", one TraceUnit per rank (ranks = {rank}, its stage and replica), iteration_time =
// the last end over all ranks, a pipeline transfer's transfer_start the later of its send's and its
// recv's posts (as the simulator defines it); elsewhere an empty vector. Throws sim::ConfigError("cluster.gpus")
// when the job's process count is not the plan's world size, and MpiError for MPI failures.
std::vector<Trace> run_cpu_iterations(const models::Workload& workload, const CpuRunOptions& options);

}  // namespace megasim::backend::cpu
