// The cuda backend's calibration probe (backend/probe.h GpuProbe), behind `megasim calibrate
// --backend cuda [--gpus N]`: this process's GPU (cuBLASLt GEMMs, a copy of a buffer far beyond any
// L2, back-to-back kernels) and, in a job of several GPU processes, the links between them over NCCL
// (nccl_probe.h).
//
// The job: options.processes > 1 starts that many processes on this machine's GPUs under mpirun
// (cuda_job.h); under a launcher (mpirun, srun, a RANK/WORLD_SIZE launcher) the job is the
// launcher's, one process per GPU across its hosts, and options.processes, when given, must equal its
// size. Rank 0 measures its GPU as a one-GPU probe does (the other ranks wait), then every rank takes
// part in the NCCL measurements that rank 0's links() starts.
#pragma once

#include <functional>

#include "backend/backend.h"
#include "backend/probe.h"

namespace megasim::backend::cuda {

// Throws sim::ConfigError naming "--gpus" (< 1, more than the visible GPUs for a job started here,
// or not the launcher's size), "--nccl-max-bytes", "--repetitions", "--gpu" (a name gpus.csv does not
// have, or a device it does not know) or "--backend" (no visible GPU) before any measurement;
// CudaError for CUDA/NCCL failures. Calls `on_rank_zero` with the probe on world rank 0 only.
void run_gpu_probe(const ProbeOptions& options, const std::function<void(const GpuProbe&)>& on_rank_zero);

}  // namespace megasim::backend::cuda
