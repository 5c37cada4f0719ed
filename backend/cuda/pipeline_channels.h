// How the cuda backend carries a pipeline's point-to-point traffic over NCCL. NCCL matches the
// sends and receives of a communicator in the order each side issues them, and a CUDA stream runs
// one NCCL operation at a time, so the backend gives every ordered pair of adjacent stages (a → b)
// a communicator of its own, holding the two ranks, with one stream per side: a's sends to b and
// b's receives from a then match one for one in program order. This needs each stage's sends to a
// peer in the same order as the peer's receives from it, which check_fifo_order verifies for a
// workload. Pure functions: no NCCL or CUDA call, testable anywhere.
//
// Pairs: pair s joins stages s and (s + 1) mod pp, for s in [0, pair_count(pp)): pp pairs around
// the ring when pp > 2 (the wrap pair pp-1 → 0 carries interleaved schedules' traffic between model
// chunks), one when pp = 2, none when pp = 1. Each pair has two directed communicators: "up" (s →
// s+1) and "down" (s+1 → s). In both, stage s has communicator rank 0 and stage s+1 rank 1.
//
// Communicators are made with ncclCommSplit, collective over the world, which puts each rank in at
// most one new communicator per call. Pairs are therefore split in rounds in which no stage is in
// two pairs: round s mod 2, and round 2 for the last pair of an odd ring.
#pragma once

#include <cstdint>
#include <optional>

#include "models/workload.h"

namespace megasim::backend::cuda {

constexpr int kPairSplitRounds = 3;

struct DirectedPair {
  std::int64_t pair = 0;  // s: the pair of stages s and (s + 1) mod pp
  bool up = true;         // traffic from stage s to s+1 (else from s+1 to s)
};

[[nodiscard]] std::int64_t pair_count(std::int64_t pp);
// The round in which pair s is split (0, 1 or 2).
[[nodiscard]] int split_round(std::int64_t pp, std::int64_t pair);
// The pair `stage` belongs to in `round`, if any (at most one, by construction).
[[nodiscard]] std::optional<std::int64_t> pair_in_round(std::int64_t pp, std::int64_t stage, int round);
// The directed pair carrying traffic from `from` to `to`. Throws CudaError unless the two stages are
// different and adjacent on the ring of pp stages.
[[nodiscard]] DirectedPair directed_pair(std::int64_t pp, std::int64_t from, std::int64_t to);
// The stage's rank in the pair's communicators: 0 for stage s, 1 for stage s+1.
[[nodiscard]] int rank_in_pair(std::int64_t pp, std::int64_t pair, std::int64_t stage);

// Throws CudaError naming the two stages and the first mismatch unless, for every ordered pair of
// stages, the sender's sends to the receiver (in program order) and the receiver's receives from
// the sender (in program order) have the same tags and bytes.
void check_fifo_order(const models::Workload& workload);

}  // namespace megasim::backend::cuda
