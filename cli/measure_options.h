// The real backends' job options from the command line (backend/backend.h): this command, to
// re-execute under mpirun for a job started here, and the exchange of rank 0's NCCL id through the
// file $MEGASIM_NCCL_ID_FILE for a job a RANK/WORLD_SIZE launcher started without MPI.
#pragma once

#include <chrono>

#include "backend/backend.h"

namespace megasim::cli {

backend::MeasureOptions measure_options(int warmup_iterations, int iterations, std::chrono::milliseconds timeout);

// A calibration's probe options with this command's job options (as measure_options).
backend::ProbeOptions probe_options(int repetitions);

// Rank 0 writes the bytes to $MEGASIM_NCCL_ID_FILE (scenarios/config/output_files.h: a temporary
// renamed, so readers never see half of it; a FIFO, device or folder there is refused); the others
// wait up to 120 s for the file and read it as an input file (scenarios/config/input_file.h: never
// blocking on a FIFO). Throws sim::ConfigError("MEGASIM_NCCL_ID_FILE") when it is not set or
// nothing appears.
backend::SharedFileExchange nccl_id_file_exchange();

}  // namespace megasim::cli
