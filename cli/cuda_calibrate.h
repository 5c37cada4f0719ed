// `megasim calibrate --backend cuda [--gpus N]` (cuda builds only): the single-GPU measurements of
// scenarios/calibrate_study.h on this process's GPU and, in a job of several GPU processes, the
// NCCL measurements of its links (backend/cuda/nccl_probe.h) fitted by
// scenarios/collective_calibration.h.
//
// The job: --gpus N > 1 starts N processes on this machine's GPUs under mpirun (backend/cuda/cuda_job.h);
// under a launcher (mpirun, srun, a RANK/WORLD_SIZE launcher) the job is the launcher's, one process
// per GPU across its hosts, and --gpus, when given, must equal its size. Rank 0 measures the GEMMs
// and copies as a one-GPU calibration does (the other ranks wait), then every rank takes part in the
// NCCL measurements, and rank 0 fits, prints and writes.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "scenarios/calibrate_study.h"
#include "scenarios/scenario.h"

namespace megasim::cli {

struct CudaCalibrateOptions {
  std::string gpu;                               // --gpu: the GpuSpec name; empty: from the device's name
  std::optional<int> repetitions;                // timed runs per measurement (default 20)
  std::optional<int> gpus;                       // --gpus: processes of the job (default 1, or the launcher's)
  double nccl_max_bytes = 1024.0 * 1024 * 1024;  // --nccl-max-bytes: the largest collective size
};

// Throws sim::ConfigError naming "--gpus" (< 1, more than the visible GPUs for a job started here,
// or not the launcher's size), "--nccl-max-bytes", "--gpu" or "--backend" (no visible GPU) before
// any measurement; CudaError for CUDA/NCCL failures. Calls `on_rank_zero` with the report on world
// rank 0 only.
void run_cuda_calibration(const scenarios::Scenario& scenario, const CudaCalibrateOptions& options,
                          const std::function<void(const scenarios::CalibrationReport&)>& on_rank_zero);

}  // namespace megasim::cli
