// One rank's NCCL communicators for its plan (DESIGN.md "Real backends"): the world, its tensor- and
// data-parallel groups (Megatron rank order, models/parallel_groups.h) and the directed pipeline
// pairs of pipeline_channels.h, made with ncclCommInitRank once and ncclCommSplit from it.
//
// Bootstrap: the world communicator needs rank 0's ncclUniqueId on every rank; the caller supplies
// the broadcast (MPI_Bcast under mpirun or srun, a shared file for other launchers), so this folder
// needs no MPI. Construction is collective: every rank of the job constructs one with the same
// layout, on its own GPU (cudaSetDevice first). Each new communicator is exercised once (a 1-element
// all-reduce, or a 1-element send along a pipeline pair) so that NCCL sets up its connections here,
// where every rank takes part in the same order, rather than inside an iteration.
//
// Failure handling: abort() calls ncclCommAbort on every communicator (safe from another thread
// while operations hang: the rank executor's watchdog does so), after which the object only
// destroys; async_error() polls ncclCommGetAsyncError, which reports a peer's failure that would
// otherwise show only as a hang.
#pragma once

#include <nccl.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/parallel_groups.h"

namespace megasim::backend::cuda {

using NcclId = std::array<char, NCCL_UNIQUE_ID_BYTES>;
// Replaces `id` on every rank with rank 0's (which rank 0 generated with ncclGetUniqueId).
using IdBroadcast = std::function<void(NcclId& id)>;

class NcclComms {
 public:
  // Throws CudaError for NCCL failures (the message names the communicator), sim::ConfigError
  // ("cluster.gpus") when the layout's world size is not the job's (`world_size`).
  NcclComms(const models::ParallelLayout& layout, int world_rank, int world_size, const IdBroadcast& broadcast);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] std::int64_t stage() const { return layout_.pp_rank(rank_); }
  [[nodiscard]] const models::ParallelLayout& layout() const { return layout_; }
  [[nodiscard]] ncclComm_t world() const { return world_; }
  [[nodiscard]] ncclComm_t tensor() const { return tensor_; }  // nullptr when tp = 1
  [[nodiscard]] ncclComm_t data() const { return data_; }      // nullptr when dp = 1

  struct Channel {
    ncclComm_t comm = nullptr;
    int peer = 0;  // the other rank's rank in `comm`
  };
  // The communicator carrying this rank's pipeline traffic to (send) or from (receive) its peer at
  // `peer_stage` (an adjacent stage; CudaError otherwise).
  [[nodiscard]] Channel send_channel(std::int64_t peer_stage) const;
  [[nodiscard]] Channel recv_channel(std::int64_t peer_stage) const;

  // ncclCommAbort on every communicator, once; thread-safe and noexcept.
  void abort() noexcept;
  [[nodiscard]] bool aborted() const { return aborted_.load(); }
  // The first asynchronous error of any communicator, as text; empty when there is none.
  [[nodiscard]] std::string async_error() const;

 private:
  [[nodiscard]] Channel channel(std::int64_t from, std::int64_t to) const;
  // The communicators in creation order (destroyed in reverse).
  [[nodiscard]] std::vector<ncclComm_t> all() const;

  models::ParallelLayout layout_;
  int rank_ = 0;
  ncclComm_t world_ = nullptr;
  ncclComm_t tensor_ = nullptr;
  ncclComm_t data_ = nullptr;
  // Per pair this rank's stage belongs to (index = pair s), the up and down communicators.
  std::vector<std::array<ncclComm_t, 2>> pairs_;
  std::atomic<bool> aborted_{false};
};

}  // namespace megasim::backend::cuda
