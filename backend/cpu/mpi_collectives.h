// The MPI calls behind the cpu backend's collectives, shared by the executor (cpu_executor.h) and
// the calibration probe (mpi_probe.h), so that calibration times exactly what a run executes.
// Elements are float32 and `bytes` is the nccl-tests size of the call (models/workload.h): the buffer
// of an all-reduce or broadcast, the input of a reduce-scatter, the output of an all-gather; each
// member's part is bytes / 4 / members elements (at least one).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "models/collective.h"

namespace megasim::backend::cpu {

// Working memory of one collective call, grown on first use and kept for the next.
struct CollectiveBuffers {
  std::vector<float> in;
  std::vector<float> out;
};

// float32 elements of a buffer of `bytes` (at least one, so that every call moves something).
std::size_t floats_of(double bytes);

// Starts the non-blocking MPI collective (MPI_Iallreduce, MPI_Ireduce_scatter_block, MPI_Iallgather,
// MPI_Ibcast from member 0, MPI_Ialltoall) over `comm`; `group` names the communicator in errors
// ("data group"). Throws MpiError; kSendRecv is not a collective here (asserted).
MPI_Request start_collective(models::CollectiveOp op, double bytes, MPI_Comm comm, CollectiveBuffers& buffers,
                             std::string_view group);

// start_collective, then MPI_Wait.
void run_collective(models::CollectiveOp op, double bytes, MPI_Comm comm, CollectiveBuffers& buffers,
                    std::string_view group);

}  // namespace megasim::backend::cpu
