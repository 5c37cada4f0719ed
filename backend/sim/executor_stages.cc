// What every unit of a stage shares: the dependency graph of its program in both directions, the
// order of each stream, its DP calls, and the match of each send or recv on the peer stage.
#include <map>
#include <tuple>

#include "backend/sim/executor_impl.h"
#include "sim/error.h"

namespace megasim::backend::detail {
namespace {

std::int32_t peer_stage(std::int64_t stage, const models::Task& task, std::int64_t pp) {
  return static_cast<std::int32_t>(((stage + task.peer_offset) % pp + pp) % pp);
}

// The dependents of each task (CSR, each list in program order), from the deps lists.
void add_dependents(const models::StageProgram& program, StageInfo& info) {
  const std::size_t n = program.tasks.size();
  info.dependents_begin.resize(n + 1, 0);
  for (const models::Task& task : program.tasks) {
    for (const std::int32_t d : task.deps) ++info.dependents_begin[static_cast<std::size_t>(d) + 1];
  }
  for (std::size_t i = 0; i < n; ++i) info.dependents_begin[i + 1] += info.dependents_begin[i];
  info.dependents.resize(static_cast<std::size_t>(info.dependents_begin[n]));
  std::vector<std::int32_t> fill(info.dependents_begin.begin(), info.dependents_begin.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::int32_t d : program.tasks[i].deps) {
      info.dependents[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] = static_cast<std::int32_t>(i);
    }
  }
}

}  // namespace

StageInfo stage_structure(const models::StageProgram& program) {
  StageInfo info;
  const std::size_t n = program.tasks.size();
  info.dep_count.resize(n, 0);
  info.peer_task.resize(n, -1);
  info.dp_call.resize(n, -1);
  info.kind.resize(n);
  info.stream.resize(n);
  info.peer_offset.resize(n, 0);
  info.bytes.resize(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const models::Task& task = program.tasks[i];
    for (const std::int32_t d : task.deps) {
      MEGASIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i, "a task depends on a later or unknown task");
    }
    MEGASIM_ASSERT(task.deps.size() <= static_cast<std::size_t>(INT16_MAX), "a task has too many dependencies");
    info.dep_count[i] = static_cast<std::int32_t>(task.deps.size());
    const auto stream = static_cast<std::size_t>(task.stream);
    MEGASIM_ASSERT(stream < kStreams, "a task names an unknown stream");
    info.stream_tasks[stream].push_back(static_cast<std::int32_t>(i));
    info.kind[i] = task.kind;
    info.stream[i] = static_cast<std::uint8_t>(stream);
    MEGASIM_ASSERT(task.peer_offset >= -1 && task.peer_offset <= 1, "a pipeline peer is not a neighbouring stage");
    info.peer_offset[i] = static_cast<std::int8_t>(task.peer_offset);
    info.bytes[i] = task.bytes;
    if (task.kind == models::TaskKind::kDpCollective) info.dp_call[i] = info.dp_calls++;
  }
  add_dependents(program, info);
  return info;
}

// Pairs every send with the recv on its peer stage that has the same tag and names the sender's
// stage as its peer; every send and recv must find exactly one partner.
void match_p2p(const models::Workload& workload, std::vector<StageInfo>& stages) {
  const auto pp = static_cast<std::int64_t>(workload.stages.size());
  std::map<std::tuple<std::int64_t, std::int32_t, std::int32_t>, std::int32_t> recvs;  // (tag, from, to) -> task
  for (std::int32_t s = 0; s < pp; ++s) {
    const auto& tasks = workload.stages[static_cast<std::size_t>(s)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kPpRecv) continue;
      const bool fresh =
          recvs.emplace(std::tuple{tasks[i].tag, peer_stage(s, tasks[i], pp), s}, static_cast<std::int32_t>(i)).second;
      MEGASIM_ASSERT(fresh, "two recvs of one stage share a tag and a peer");
    }
  }
  for (std::int32_t s = 0; s < pp; ++s) {
    const auto& tasks = workload.stages[static_cast<std::size_t>(s)].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kPpSend) continue;
      const std::int32_t to = peer_stage(s, tasks[i], pp);
      MEGASIM_ASSERT(to != s, "a send to its own stage");
      const auto it = recvs.find(std::tuple{tasks[i].tag, s, to});
      MEGASIM_ASSERT(it != recvs.end(), "a send has no recv with its tag on the peer stage");
      std::int32_t& back = stages[static_cast<std::size_t>(to)].peer_task[static_cast<std::size_t>(it->second)];
      MEGASIM_ASSERT(back < 0, "two sends match one recv");
      back = static_cast<std::int32_t>(i);
      stages[static_cast<std::size_t>(s)].peer_task[i] = it->second;
      recvs.erase(it);
    }
  }
  MEGASIM_ASSERT(recvs.empty(), "a recv has no send with its tag on the peer stage");
}

}  // namespace megasim::backend::detail
