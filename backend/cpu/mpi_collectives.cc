#include "backend/cpu/mpi_collectives.h"

#include <algorithm>
#include <string>

#include "backend/mpi/mpi_session.h"
#include "sim/error.h"

namespace megasim::backend::cpu {

std::size_t floats_of(double bytes) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(bytes / 4.0));
}

MPI_Request start_collective(models::CollectiveOp op, double bytes, MPI_Comm comm, CollectiveBuffers& buffers,
                             std::string_view group) {
  int members = 1;
  mpi::check_mpi(MPI_Comm_size(comm, &members), "MPI_Comm_size");
  const std::size_t n = floats_of(bytes);
  const int count = static_cast<int>(n);
  const int part = static_cast<int>(std::max<std::size_t>(1, n / static_cast<std::size_t>(members)));
  const std::size_t room = std::max(n, static_cast<std::size_t>(part) * static_cast<std::size_t>(members));
  if (buffers.in.size() < room) buffers.in.assign(room, 1.0F);
  if (buffers.out.size() < room) buffers.out.assign(room, 0.0F);
  float* in = buffers.in.data();
  float* out = buffers.out.data();
  const std::string where = " (" + std::string(group) + ")";
  MPI_Request request = MPI_REQUEST_NULL;
  switch (op) {
    case models::CollectiveOp::kAllReduce:
      mpi::check_mpi(MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm, &request), "MPI_Iallreduce" + where);
      break;
    case models::CollectiveOp::kReduceScatter:
      mpi::check_mpi(MPI_Ireduce_scatter_block(in, out, part, MPI_FLOAT, MPI_SUM, comm, &request),
                     "MPI_Ireduce_scatter_block" + where);
      break;
    case models::CollectiveOp::kAllGather:
      mpi::check_mpi(MPI_Iallgather(in, part, MPI_FLOAT, out, part, MPI_FLOAT, comm, &request),
                     "MPI_Iallgather" + where);
      break;
    case models::CollectiveOp::kBroadcast:
      mpi::check_mpi(MPI_Ibcast(in, count, MPI_FLOAT, 0, comm, &request), "MPI_Ibcast" + where);
      break;
    case models::CollectiveOp::kAllToAll:
      mpi::check_mpi(MPI_Ialltoall(in, part, MPI_FLOAT, out, part, MPI_FLOAT, comm, &request), "MPI_Ialltoall" + where);
      break;
    case models::CollectiveOp::kSendRecv:
      MEGASIM_ASSERT(false, "a send/recv is not a collective call");
  }
  return request;
}

void run_collective(models::CollectiveOp op, double bytes, MPI_Comm comm, CollectiveBuffers& buffers,
                    std::string_view group) {
  MPI_Request request = start_collective(op, bytes, comm, buffers, group);
  mpi::check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait (" + std::string(group) + ")");
}

}  // namespace megasim::backend::cpu
