// The flow arrows of a Perfetto trace (perfetto_trace.h): one per PP transfer, from the send's slice
// to its recv's slice, as Chrome trace flow events: {"ph":"s"} on the sender's thread and
// {"ph":"f","bp":"e"} on the receiver's, with the same "id", "cat":"pp_flow" and the send's name,
// each at the middle of its slice, so that each binds to the slice enclosing it.
#pragma once

#include <cstdint>
#include <vector>

#include "models/workload.h"

namespace megasim::scenarios {

// The recv of every PP send, paired as the simulator pairs them (backend/sim match_p2p): the recv
// of the peer stage (stage + peer_offset, mod pp) with the same tag whose peer is the sender's stage.
// The peer rank has the sender's TP rank and DP replica.
class PpPairs {
 public:
  explicit PpPairs(const models::Workload& workload);
  // The index of the recv matching task `task` of `stage` in its peer stage's program; -1 when the
  // task is not a send (or, in a malformed workload, has no recv).
  [[nodiscard]] std::int32_t recv_of(std::int32_t stage, std::size_t task) const {
    return recv_[static_cast<std::size_t>(stage)][task];
  }
  // The stage a send or recv of `stage` exchanges with.
  [[nodiscard]] std::int32_t peer_stage(std::int32_t stage, const models::Task& task) const;

 private:
  std::int64_t pp_ = 1;
  std::vector<std::vector<std::int32_t>> recv_;  // [stage][task]
};

}  // namespace megasim::scenarios
