#include "scenarios/report/perfetto_flows.h"

#include <map>
#include <tuple>

namespace megasim::scenarios {

PpPairs::PpPairs(const models::Workload& workload) : pp_(static_cast<std::int64_t>(workload.stages.size())) {
  // (stage, tag, peer stage) -> the recv task
  std::map<std::tuple<std::int32_t, std::int64_t, std::int32_t>, std::int32_t> recvs;
  for (std::size_t s = 0; s < workload.stages.size(); ++s) {
    const auto stage = static_cast<std::int32_t>(s);
    const std::vector<models::Task>& tasks = workload.stages[s].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kPpRecv) continue;
      recvs.emplace(std::tuple{stage, tasks[i].tag, peer_stage(stage, tasks[i])}, static_cast<std::int32_t>(i));
    }
  }
  recv_.resize(workload.stages.size());
  for (std::size_t s = 0; s < workload.stages.size(); ++s) {
    const auto stage = static_cast<std::int32_t>(s);
    const std::vector<models::Task>& tasks = workload.stages[s].tasks;
    recv_[s].assign(tasks.size(), -1);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kPpSend) continue;
      const auto it = recvs.find(std::tuple{peer_stage(stage, tasks[i]), tasks[i].tag, stage});
      if (it != recvs.end()) recv_[s][i] = it->second;
    }
  }
}

std::int32_t PpPairs::peer_stage(std::int32_t stage, const models::Task& task) const {
  return static_cast<std::int32_t>(((stage + task.peer_offset) % pp_ + pp_) % pp_);
}

}  // namespace megasim::scenarios
