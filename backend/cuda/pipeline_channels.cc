#include "backend/cuda/pipeline_channels.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/device_info.h"

namespace megasim::backend::cuda {
namespace {

std::int64_t ring(std::int64_t stage, std::int64_t pp) {
  return ((stage % pp) + pp) % pp;
}

std::string stages_text(std::int64_t from, std::int64_t to) {
  return "stage " + std::to_string(from) + " -> stage " + std::to_string(to);
}

struct Message {
  std::int64_t tag = 0;
  double bytes = 0;
};

}  // namespace

std::int64_t pair_count(std::int64_t pp) {
  if (pp <= 1) return 0;
  return pp == 2 ? 1 : pp;
}

int split_round(std::int64_t pp, std::int64_t pair) {
  if (pp > 2 && pp % 2 == 1 && pair == pp - 1) return 2;
  return static_cast<int>(pair % 2);
}

std::optional<std::int64_t> pair_in_round(std::int64_t pp, std::int64_t stage, int round) {
  const std::int64_t pairs = pair_count(pp);
  // A stage belongs to the pair it starts (s = stage) and the one it ends (s = stage - 1 mod pp).
  for (const std::int64_t s : {stage, ring(stage - 1, pp)}) {
    if (s < pairs && split_round(pp, s) == round) return s;
  }
  return std::nullopt;
}

DirectedPair directed_pair(std::int64_t pp, std::int64_t from, std::int64_t to) {
  if (pp < 2 || from == to || from < 0 || to < 0 || from >= pp || to >= pp) {
    throw CudaError("no pipeline channel for " + stages_text(from, to) + " with " + std::to_string(pp) + " stages");
  }
  if (pp == 2) return DirectedPair{0, from == 0};
  if (to == ring(from + 1, pp)) return DirectedPair{from, true};
  if (from == ring(to + 1, pp)) return DirectedPair{to, false};
  throw CudaError("no pipeline channel for " + stages_text(from, to) + ": the stages are not adjacent");
}

int rank_in_pair(std::int64_t pp, std::int64_t pair, std::int64_t stage) {
  return stage == pair ? 0 : (stage == ring(pair + 1, pp) ? 1 : -1);
}

void check_fifo_order(const models::Workload& workload) {
  const auto pp = static_cast<std::int64_t>(workload.stages.size());
  // (from, to) -> messages in the sender's and in the receiver's program order.
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<std::vector<Message>, std::vector<Message>>> channels;
  for (std::int64_t stage = 0; stage < pp; ++stage) {
    for (const models::Task& t : workload.stages[static_cast<std::size_t>(stage)].tasks) {
      const bool send = t.kind == models::TaskKind::kPpSend;
      if (!send && t.kind != models::TaskKind::kPpRecv) continue;
      const std::int64_t peer = ring(stage + t.peer_offset, pp);
      auto& channel = send ? channels[{stage, peer}] : channels[{peer, stage}];
      (send ? channel.first : channel.second).push_back(Message{t.tag, t.bytes});
    }
  }
  for (const auto& [stages, messages] : channels) {
    const auto& [sends, recvs] = messages;
    const std::string where = stages_text(stages.first, stages.second);
    if (sends.size() != recvs.size()) {
      throw CudaError("pipeline " + where + ": " + std::to_string(sends.size()) + " sends but " +
                      std::to_string(recvs.size()) + " receives");
    }
    for (std::size_t i = 0; i < sends.size(); ++i) {
      if (sends[i].tag != recvs[i].tag || sends[i].bytes != recvs[i].bytes) {
        throw CudaError("pipeline " + where + ": message " + std::to_string(i) + " is sent as tag " +
                        std::to_string(sends[i].tag) + " but received as tag " + std::to_string(recvs[i].tag) +
                        " (NCCL matches point-to-point messages in issue order)");
      }
    }
  }
}

}  // namespace megasim::backend::cuda
