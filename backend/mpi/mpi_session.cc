#include "backend/mpi/mpi_session.h"

#include <array>
#include <string>

#include "sim/error.h"

namespace megasim::backend::mpi {

namespace {

bool mpi_usable() {
  int initialised = 0;
  int finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  return initialised != 0 && finalised == 0;
}

// The world rank for error messages; -1 before MPI_Init or after MPI_Finalize, when there is none.
int world_rank_or_unknown() {
  int rank = -1;
  if (!mpi_usable() || MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) return -1;
  return rank;
}

std::string error_string(int rc) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(rc, text.data(), &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return {text.data(), static_cast<std::size_t>(length)};
}

// Collective over MPI_COMM_WORLD: every rank joins the group `color`, ranked by `key` inside it.
MPI_Comm split_world(std::int64_t color, std::int64_t key) {
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color), static_cast<int>(key), &comm), "MPI_Comm_split");
  return comm;
}

void free_comm(MPI_Comm& comm) {
  if (comm != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

}  // namespace

void check_mpi(int rc, std::string_view call) {
  if (rc == MPI_SUCCESS) return;
  throw MpiError("rank " + std::to_string(world_rank_or_unknown()) + ": " + std::string(call) +
                 " failed: " + error_string(rc));
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialised = 0;
  check_mpi(MPI_Initialized(&initialised), "MPI_Initialized");
  if (initialised == 0) {
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
    // Only the main thread calls MPI; a library that cannot promise even that is unusable here.
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      throw MpiError("rank " + std::to_string(world_rank_or_unknown()) +
                     ": MPI_Init_thread provides no MPI_THREAD_FUNNELED support");
    }
  }
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
  if (owns_ && mpi_usable()) MPI_Finalize();
}

RankGroups::RankGroups(const models::ParallelLayout& layout, int world_rank) {
  int world_size = 0;
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
  if (layout.world_size() != world_size) {
    throw MpiError("rank " + std::to_string(world_rank) + ": the plan needs " + std::to_string(layout.world_size()) +
                   " processes (tensor " + std::to_string(layout.tensor) + " x pipeline " +
                   std::to_string(layout.pipeline) + " x data " + std::to_string(layout.data) + ") and the job has " +
                   std::to_string(world_size));
  }
  int actual_rank = -1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &actual_rank), "MPI_Comm_rank");
  MEGASIM_ASSERT(world_rank == actual_rank, "RankGroups needs this process's MPI_COMM_WORLD rank");

  const std::int64_t tp = layout.tp_rank(world_rank);
  const std::int64_t dp = layout.dp_rank(world_rank);
  const std::int64_t pp = layout.pp_rank(world_rank);
  // Color = the group's index among the groups of its kind, key = the position inside it, so each
  // communicator's ranks are the parallel indices. Every rank splits in the same order (collective).
  try {
    tensor_ = split_world(dp + layout.data * pp, tp);
    pipeline_ = split_world(tp + layout.tensor * dp, pp);
    data_ = split_world(tp + layout.tensor * pp, dp);
  } catch (...) {
    free_comm(tensor_);
    free_comm(pipeline_);
    throw;
  }
}

RankGroups::~RankGroups() {
  free_comm(data_);
  free_comm(pipeline_);
  free_comm(tensor_);
}

}  // namespace megasim::backend::mpi
