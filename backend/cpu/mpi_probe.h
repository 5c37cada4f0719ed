// Measured MPI transfer costs between the processes of this job, for `megasim calibrate --backend
// cpu`: what the simulator needs to model the links between ranks (DESIGN.md "Real backends").
// Collective calls: every rank of MPI_COMM_WORLD must call them together.
#pragma once

#include <mpi.h>

#include <vector>

#include "backend/host_groups.h"
#include "models/collective.h"

namespace megasim::backend::cpu {

struct TransferPoint {
  double bytes = 0;
  double seconds = 0;  // median one-way time of a message of `bytes` (half a ping-pong round trip)
};

struct LinkFit {
  double latency_s = 0;    // fitted fixed cost of one message
  double bytes_per_s = 0;  // fitted bandwidth (1 / slope)
  std::vector<TransferPoint> points;
};

// Ping-pong between world ranks 0 and 1 over sizes from 8 B to `max_bytes` (x4 steps, plus
// `max_bytes` itself when the steps miss it; sizes are whole floats), median of `repetitions`
// samples, a sample of a small message averaging repeated round trips; least-squares fit of
// seconds = latency + bytes / bandwidth over the points of 64 KiB and up (the two largest when
// fewer) for the bandwidth, and the smallest size's time for the latency. Other ranks wait at a
// barrier. Throws MpiError with fewer than 2 processes; the same result on every rank (broadcast
// from rank 0), points in increasing size.
LinkFit measure_point_to_point(double max_bytes = 64.0 * 1024 * 1024, int repetitions = 5);
// The same between world ranks `first` and `second` (distinct, in the job; asserted).
LinkFit measure_point_to_point_between(int first, int second, double max_bytes = 64.0 * 1024 * 1024,
                                       int repetitions = 5);

// Which host each rank of MPI_COMM_WORLD runs on: the ranks of one MPI_COMM_TYPE_SHARED group share
// a host, named by the world rank of its first member; the same on every rank. Collective over
// MPI_COMM_WORLD. Throws sim::ConfigError from group_by_host when hosts hold different numbers of
// ranks.
HostGroups world_host_groups();

// This rank's communicator of one kind of host group (intra-node: its host's ranks; inter-node: the
// ranks of its local index on every host), split from MPI_COMM_WORLD and freed on destruction.
// Collective over MPI_COMM_WORLD.
class HostComm {
 public:
  HostComm(const HostGroups& groups, HostLink link);
  ~HostComm();
  HostComm(const HostComm&) = delete;
  HostComm& operator=(const HostComm&) = delete;
  [[nodiscard]] MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Median seconds of one collective call of `bytes` over `comm`, made as the cpu backend makes it
// (mpi_collectives.h: non-blocking start, then wait), each sample the slowest member's time after a
// barrier (the collective ends when its last member does); the same on every member of `comm`.
double measure_collective_s(MPI_Comm comm, models::CollectiveOp op, double bytes, int repetitions = 5);

}  // namespace megasim::backend::cpu
