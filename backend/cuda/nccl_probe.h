// nccl-tests-style measurements of a job's links for `megasim calibrate --backend cuda` (DESIGN.md
// "Real backends"): all-reduce, all-gather and reduce-scatter over each kind of host group
// (backend/host_groups.h), and a point-to-point ping-pong between two ranks of each kind.
//
// Conventions are nccl-tests' (doc/PERFORMANCE.md): a size is the whole buffer (the input of a
// reduce-scatter, the output of an all-gather; nccl_collectives.h), bf16 elements; per size,
// `warmup` untimed calls, then `repetitions` back-to-back calls between two CUDA events, the time of
// one call being the elapsed time over `repetitions`, and the job's time the slowest rank's (an NCCL
// all-reduce with ncclMax over the world). algbw = size / time, busbw = algbw x
// models::bus_bandwidth_factor(op, ranks). The ping-pong's time is half a round trip of ncclSend /
// ncclRecv between the two ranks (factor 1).
//
// Every group of a kind runs at once (each host's intra-node group; every local index's inter-node
// group, so each GPU drives its own NIC as in a training job's data-parallel rings); the ping-pong
// runs on one pair while the other ranks wait. Hosts are told apart by gethostname, exchanged with an
// NCCL all-gather of fixed-size names.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "backend/host_groups.h"
#include "models/collective.h"

namespace megasim::backend::cuda {

struct NcclProbeOptions {
  double min_bytes = 8.0 * 1024;            // first size
  double max_bytes = 1024.0 * 1024 * 1024;  // cap: the last size (and the buffers' size)
  double step = 4;                          // size factor between points
  int warmup = 5;
  int repetitions = 20;
};
// Throws sim::ConfigError("--nccl-max-bytes") unless 0 < min_bytes <= max_bytes, and
// ("--repetitions") for repetitions < 1 or warmup < 0, or a step <= 1.
void validate(const NcclProbeOptions& options);

// min_bytes, min_bytes x step, ... up to max_bytes, and max_bytes itself when the steps miss it.
std::vector<double> probe_sizes(const NcclProbeOptions& options);

struct NcclPoint {
  HostLink link = HostLink::kIntraNode;
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;  // kSendRecv: the ping-pong
  int ranks = 0;                                               // members of the group (2 for the ping-pong)
  double bytes = 0;                                            // nccl-tests size, as run (whole elements)
  double seconds = 0;                                          // one call, the slowest rank's

  [[nodiscard]] double algbw_bytes_per_s() const { return bytes / seconds; }
  [[nodiscard]] double busbw_bytes_per_s() const {
    return algbw_bytes_per_s() * models::bus_bandwidth_factor(op, ranks);
  }
};

struct NcclProbeResult {
  HostGroups hosts;
  std::vector<NcclPoint> points;  // per link, op and size, in measuring order
};

// The collectives this probe runs over each group, in measuring order.
inline constexpr models::CollectiveOp kProbedCollectives[] = {
    models::CollectiveOp::kAllReduce, models::CollectiveOp::kAllGather, models::CollectiveOp::kReduceScatter};

// Measures every link kind the job has (intra-node when a host holds two or more ranks, inter-node
// when the job spans two or more hosts) over `world`, a communicator of every rank of the job.
// Collective: every rank calls it together on its own GPU (the current device); the same result on
// every rank. Throws CudaError for CUDA/NCCL failures, sim::ConfigError from group_by_host, and
// options' errors (validate) before any NCCL call.
NcclProbeResult measure_nccl_links(ncclComm_t world, const NcclProbeOptions& options);

}  // namespace megasim::backend::cuda
