// A backend that runs a workload for real (DESIGN.md "Real backends"): the cpu backend (Eigen
// kernels, MPI between processes) and the cuda backend (CUDA kernels, NCCL), one process per rank.
// The simulator plays the same workload on the modelled cluster through scenarios::run_iteration_study,
// which needs the cluster as well. make_backend (backend/registry.cc) is the only place that knows
// which are built.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/mpi/mpi_job.h"
#include "backend/registry.h"
#include "backend/trace.h"
#include "models/workload.h"

namespace megasim::backend {

// How ranks started without MPI (a torchrun-style launcher setting RANK and WORLD_SIZE) share rank
// 0's bytes: rank 0 writes `bytes` where every rank sees it, the others wait for them and fill
// `bytes` (the caller's: the command line puts them in $MEGASIM_NCCL_ID_FILE). Throws
// sim::ConfigError when it cannot.
using SharedFileExchange = std::function<void(int rank, std::span<char> bytes)>;

struct MeasureOptions {
  int warmup_iterations = 1;  // run first and discarded
  int iterations = 3;         // measured
  // A rank that makes no progress for this long fails the run, naming what it waited for.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  mpi::CommandLine relaunch;         // this command, re-executed under mpirun for a job started here
  SharedFileExchange file_exchange;  // for a job without MPI; empty: such a job is refused
  // The cpu backend only: called once on every rank inside the job, before the warm-up; what it
  // returns is called before each measured iteration with the iteration's index and destroyed inside
  // the job, so it may hold the rank's MPI resources (validate's calibration rounds run there, so
  // that they and the iterations they predict see the same machine). Empty: nothing.
  std::function<std::function<void(int iteration)>()> make_before_iteration;
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual BackendId id() const = 0;
  // Throws sim::ConfigError("--backend") when this machine cannot run the backend at all (cuda: no
  // visible GPU), before anything is prepared.
  virtual void require_machine() const {}
  // Runs `workload` as a job of workload.plan.world_size processes, started here (under mpirun, or
  // one process without it) when this process was not started by a launcher: the warm-up, then the
  // measured iterations. Calls `on_rank_zero` with one Trace per measured iteration on world rank 0
  // (backend/measured_trace.h's conventions). An error on any rank ends the whole job; in a job of
  // one process it propagates: sim::ConfigError for what the machine or the options cannot do.
  virtual void run(const models::Workload& workload, const MeasureOptions& options,
                   const std::function<void(const std::vector<Trace>&)>& on_rank_zero) const = 0;
  // Shard mode: the compute of one pipeline stage of `workload` on this process's device, without
  // its communication (one GPU standing for a stage of a plan too large for the machine): one Trace
  // per measured iteration after `warmup` discarded ones. Throws sim::ConfigError("--stage") for a
  // stage outside the plan, or for a backend without shard mode (only cuda has one).
  [[nodiscard]] virtual std::vector<Trace> run_stage(const models::Workload& workload, std::int64_t stage, int warmup,
                                                     int iterations) const;
};

// The real backend `id` names, when this build has it (backend_for said so). Throws
// sim::ConfigError("--backend") for the simulator, which is not run through this interface.
std::unique_ptr<Backend> make_backend(BackendId id);

}  // namespace megasim::backend
