// MPI for the real backends (Open MPI): the process's place in the job and the communicators of its
// tensor-, pipeline- and data-parallel groups (Megatron rank order, models/parallel_groups.h).
// Every MPI failure becomes a backend::mpi::MpiError naming the rank and the call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "models/parallel_groups.h"

namespace megasim::backend::mpi {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws MpiError("rank R: <call> failed: <MPI error string>") unless rc == MPI_SUCCESS; R is the
// MPI_COMM_WORLD rank, -1 while MPI is not initialised (or already finalised).
void check_mpi(int rc, std::string_view call);

// MPI_Init_thread(MPI_THREAD_FUNNELED) on construction (unless MPI is already initialised), sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD so that check_mpi sees errors, MPI_Finalize on destruction
// (only if it initialised MPI). One per process.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// The communicators of one rank's groups, split from MPI_COMM_WORLD (world rank = Megatron rank).
// Freed on destruction. Throws MpiError when the world size is not layout.world_size(). Collective:
// every rank of MPI_COMM_WORLD constructs one with the same layout; world_rank must be this
// process's MPI_COMM_WORLD rank (asserted). Each communicator's rank is the rank's position in the
// group: tp_rank in tensor(), pp_rank in pipeline(), dp_rank in data().
class RankGroups {
 public:
  RankGroups(const models::ParallelLayout& layout, int world_rank);
  ~RankGroups();
  RankGroups(const RankGroups&) = delete;
  RankGroups& operator=(const RankGroups&) = delete;

  [[nodiscard]] MPI_Comm tensor() const { return tensor_; }
  [[nodiscard]] MPI_Comm pipeline() const { return pipeline_; }  // ranks ordered by pipeline stage
  [[nodiscard]] MPI_Comm data() const { return data_; }          // ranks ordered by data-parallel rank

 private:
  MPI_Comm tensor_ = MPI_COMM_NULL;
  MPI_Comm pipeline_ = MPI_COMM_NULL;
  MPI_Comm data_ = MPI_COMM_NULL;
};

}  // namespace megasim::backend::mpi
