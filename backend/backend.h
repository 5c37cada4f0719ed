// A backend that runs a workload for real (DESIGN.md "Real backends"): the cpu backend (Eigen
// kernels, MPI between processes) and the cuda backend (CUDA kernels, NCCL), one process per rank;
// and measures what the simulator's cost model needs of the machine (its calibration probe,
// backend/probe.h).
// The simulator plays the same workload on the modelled cluster through scenarios::run_iteration_study,
// which needs the cluster as well. make_backend (backend/registry.cc) is the only place that knows
// which are built.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/mpi/mpi_job.h"
#include "backend/probe.h"
#include "backend/registry.h"
#include "backend/trace.h"
#include "models/memory.h"
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
  // The cpu backend only: when set, before each measured iteration every rank probes the machine
  // (one timed run per measurement, as probe_cpu with repetitions 1) and calls this with the
  // iteration's index and its probe, whose functions are collective (validate's calibration rounds
  // run there, so that they and the iterations they predict see the same machine).
  std::function<void(int iteration, const CpuProbe& probe)> probe_before_iteration;
};

// What a calibration asks of a backend's probe.
struct ProbeOptions {
  int repetitions = 20;                          // timed runs per measurement (the median is kept)
  std::string gpu_name;                          // cuda: the GpuSpec efficiencies are relative to; empty: the device's
  std::optional<int> processes;                  // cuda: GPU processes of the job; default 1, or the launcher's
  double nccl_max_bytes = 1024.0 * 1024 * 1024;  // cuda: the largest collective size measured
  mpi::CommandLine relaunch;                     // as MeasureOptions
  SharedFileExchange file_exchange;              // as MeasureOptions
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual BackendId id() const = 0;
  // Throws sim::ConfigError("--backend") when this machine cannot run the backend at all (cuda: no
  // visible GPU), before anything is prepared.
  virtual void require_machine() const {}
  // Throws sim::ConfigError when the job of `workload`, each rank holding `memory`, cannot run here
  // (cpu: "cluster.gpus" for more processes per hardware thread than mpi::require_local_job allows,
  // models::require_fits against this machine's memory per rank). Default: nothing to check.
  virtual void require_job_fits(const models::Workload& workload, const models::MemoryEstimate& memory) const;
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

  // Calibration of a GPU: measures this process's GPU and, in a job of several GPU processes, the
  // links between them; calls `on_rank_zero` with the probe on world rank 0 only (the other ranks
  // take part in the measurements its links() starts). Throws sim::ConfigError for options or a
  // machine it cannot measure, before any measurement; for a backend without GPUs,
  // ("--backend"): only cuda has one.
  virtual void probe_gpu(const ProbeOptions& options, const std::function<void(const GpuProbe&)>& on_rank_zero) const;
  // Calibration of the cpu backend on the ops of `workload`'s own plan: a job of its world size
  // (as run), every rank calling `body` with its probe (collective: backend/probe.h) and its world
  // rank. Throws sim::ConfigError("--backend") for a backend other than cpu.
  virtual void probe_cpu(const models::Workload& workload, const ProbeOptions& options,
                         const std::function<void(const CpuProbe&, int rank)>& body) const;
};

// The real backend `id` names, when this build has it (backend_for said so). Throws
// sim::ConfigError("--backend") for the simulator, which is not run through this interface.
std::unique_ptr<Backend> make_backend(BackendId id);

}  // namespace megasim::backend
