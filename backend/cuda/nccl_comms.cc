#include "backend/cuda/nccl_comms.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_libraries.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/nccl_check.h"
#include "backend/cuda/pipeline_channels.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

constexpr int kUp = 0;
constexpr int kDown = 1;

// A stream and a one-float device buffer for the warm-up exchanges.
class WarmUp {
 public:
  WarmUp() : buffer_(2 * sizeof(float), "NCCL warm-up buffer") {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate (NCCL warm-up)");
  }
  ~WarmUp() { cudaStreamDestroy(stream_); }
  WarmUp(const WarmUp&) = delete;
  WarmUp& operator=(const WarmUp&) = delete;

  void all_reduce(ncclComm_t comm, const std::string& name) {
    float* data = static_cast<float*>(buffer_.get());
    check_nccl(nccl().all_reduce(data, data + 1, 1, ncclFloat32, ncclSum, comm, stream_),
               "ncclAllReduce (warm-up of the " + name + ")", comm);
    wait(name);
  }
  void exchange(ncclComm_t comm, bool sender, const std::string& name) {
    float* data = static_cast<float*>(buffer_.get());
    const ncclResult_t status = sender ? nccl().send(data, 1, ncclFloat32, 1 - rank_of(comm), comm, stream_)
                                       : nccl().recv(data + 1, 1, ncclFloat32, 1 - rank_of(comm), comm, stream_);
    check_nccl(status, std::string(sender ? "ncclSend" : "ncclRecv") + " (warm-up of the " + name + ")", comm);
    wait(name);
  }

 private:
  static int rank_of(ncclComm_t comm) {
    int rank = 0;
    check_nccl(nccl().comm_user_rank(comm, &rank), "ncclCommUserRank", comm);
    return rank;
  }
  void wait(const std::string& name) {
    check(cudaStreamSynchronize(stream_), ("cudaStreamSynchronize (warm-up of the " + name + ")").c_str());
  }
  DeviceBuffer buffer_;
  cudaStream_t stream_ = nullptr;
};

// ncclCommSplit of `parent`: every rank calls it; those with a color get the new communicator.
// color NCCL_SPLIT_NOCOLOR: this rank takes part in the split call but joins no communicator.
ncclComm_t split(ncclComm_t parent, std::int64_t color, std::int64_t key, const std::string& name) {
  ncclComm_t out = nullptr;
  check_nccl(nccl().comm_split(parent, static_cast<int>(color), static_cast<int>(key), &out, nullptr),
             "ncclCommSplit (" + name + ")", parent);
  return color == NCCL_SPLIT_NOCOLOR ? nullptr : out;
}

}  // namespace

NcclComms::NcclComms(const models::ParallelLayout& layout, int world_rank, int world_size, const IdBroadcast& broadcast)
    : layout_(layout), rank_(world_rank) {
  if (layout.world_size() != world_size) {
    throw sim::ConfigError("cluster.gpus", std::to_string(layout.world_size()),
                           "the number of processes of the job (" + std::to_string(world_size) + ")");
  }
  try {
    NcclId id{};
    if (world_rank == 0) {
      ncclUniqueId unique{};
      check_nccl(nccl().get_unique_id(&unique), "ncclGetUniqueId");
      std::memcpy(id.data(), unique.internal, id.size());
    }
    broadcast(id);
    ncclUniqueId unique{};
    std::memcpy(unique.internal, id.data(), id.size());
    check_nccl(nccl().comm_init_rank(&world_, world_size, unique, world_rank),
               "ncclCommInitRank (world of " + std::to_string(world_size) + " ranks)");

    WarmUp warm_up;
    const std::int64_t tp = layout.tp_rank(world_rank);
    const std::int64_t dp = layout.dp_rank(world_rank);
    const std::int64_t pp = layout.pp_rank(world_rank);
    // Colors: the group's index among the groups of its kind; keys: the rank's place in the group.
    if (layout.tensor > 1) {
      tensor_ = split(world_, dp + layout.data * pp, tp, "tensor group");
      warm_up.all_reduce(tensor_, "tensor group");
    }
    if (layout.data > 1) {
      data_ = split(world_, tp + layout.tensor * pp, dp, "data group");
      warm_up.all_reduce(data_, "data group");
    }
    pairs_.assign(static_cast<std::size_t>(pair_count(layout.pipeline)), {nullptr, nullptr});
    const std::int64_t pipeline_group = tp + layout.tensor * dp;
    for (int round = 0; round < kPairSplitRounds; ++round) {
      bool round_used = false;  // the same on every rank: no split call for a round without pairs
      for (std::int64_t s = 0; s < pair_count(layout.pipeline); ++s)
        round_used |= split_round(layout.pipeline, s) == round;
      if (!round_used) continue;
      const std::optional<std::int64_t> pair = pair_in_round(layout.pipeline, pp, round);
      const std::int64_t color = pair ? pipeline_group * layout.pipeline + *pair : NCCL_SPLIT_NOCOLOR;
      const int key = pair ? rank_in_pair(layout.pipeline, *pair, pp) : 0;
      for (const int direction : {kUp, kDown}) {
        const std::string name =
            "pipeline pair " + (pair ? std::to_string(*pair) : std::string("-")) + (direction == kUp ? " up" : " down");
        ncclComm_t comm = split(world_, color, key, name);
        if (!pair) continue;
        pairs_[static_cast<std::size_t>(*pair)][static_cast<std::size_t>(direction)] = comm;
        // Up carries stage s -> s+1 (rank 0 sends), down stage s+1 -> s (rank 1 sends).
        warm_up.exchange(comm, (direction == kUp) == (key == 0), name);
      }
    }
  } catch (...) {
    abort();
    throw;
  }
}

std::vector<ncclComm_t> NcclComms::all() const {
  std::vector<ncclComm_t> out{world_, tensor_, data_};
  for (const auto& pair : pairs_) out.insert(out.end(), pair.begin(), pair.end());
  out.erase(std::remove(out.begin(), out.end(), nullptr), out.end());
  return out;
}

NcclComms::~NcclComms() {
  if (aborted_.load()) return;  // aborted communicators are already freed
  std::vector<ncclComm_t> comms = all();
  for (auto it = comms.rbegin(); it != comms.rend(); ++it) nccl().comm_destroy(*it);
}

void NcclComms::abort() noexcept {
  if (aborted_.exchange(true)) return;
  std::vector<ncclComm_t> comms = all();
  for (auto it = comms.rbegin(); it != comms.rend(); ++it) nccl().comm_abort(*it);
}

std::string NcclComms::async_error() const {
  if (aborted_.load()) return {};
  for (ncclComm_t comm : all()) {
    ncclResult_t error = ncclSuccess;
    if (nccl().comm_get_async_error(comm, &error) != ncclSuccess) return "ncclCommGetAsyncError failed";
    if (error != ncclSuccess && error != ncclInProgress) {
      const char* last = nccl().get_last_error(comm);
      return std::string(nccl().get_error_string(error)) +
             (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : "");
    }
  }
  return {};
}

NcclComms::Channel NcclComms::channel(std::int64_t from, std::int64_t to) const {
  const DirectedPair p = directed_pair(layout_.pipeline, from, to);
  ncclComm_t comm = pairs_.at(static_cast<std::size_t>(p.pair))[p.up ? kUp : kDown];
  if (comm == nullptr) throw CudaError("rank " + std::to_string(rank_) + " has no pipeline channel for this pair");
  const int mine = rank_in_pair(layout_.pipeline, p.pair, stage());
  return Channel{comm, 1 - mine};
}

NcclComms::Channel NcclComms::send_channel(std::int64_t peer_stage) const {
  return channel(stage(), peer_stage);
}

NcclComms::Channel NcclComms::recv_channel(std::int64_t peer_stage) const {
  return channel(peer_stage, stage());
}

}  // namespace megasim::backend::cuda
