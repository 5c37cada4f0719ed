// The critical path of an iteration and the short task names (contracts in iteration_report.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <utility>

#include "models/collective.h"
#include "scenarios/report/iteration_report.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

using TagIndex = std::vector<std::pair<std::int64_t, std::int32_t>>;  // (tag, task), sorted

struct StageIndex {
  std::vector<std::int32_t> stream_prev;  // previous task on the same stream; -1 when first
  TagIndex sends;
  TagIndex recvs;
};

StageIndex index_stage(const models::StageProgram& program) {
  StageIndex index;
  std::array<std::int32_t, 4> last{-1, -1, -1, -1};  // per StreamKind
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    const models::Task& t = program.tasks[i];
    const auto stream = static_cast<std::size_t>(t.stream);
    index.stream_prev.push_back(last.at(stream));
    last.at(stream) = static_cast<std::int32_t>(i);
    if (t.kind == models::TaskKind::kPpSend) index.sends.emplace_back(t.tag, static_cast<std::int32_t>(i));
    if (t.kind == models::TaskKind::kPpRecv) index.recvs.emplace_back(t.tag, static_cast<std::int32_t>(i));
  }
  std::sort(index.sends.begin(), index.sends.end());
  std::sort(index.recvs.begin(), index.recvs.end());
  return index;
}

std::int32_t find_tag(const TagIndex& index, std::int64_t tag) {
  const auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(tag, std::int32_t{-1}));
  return it != index.end() && it->first == tag ? it->second : -1;
}

class ChainWalker {
 public:
  ChainWalker(const models::Workload& workload, const backend::Trace& trace) : workload_(workload), trace_(trace) {
    for (const models::StageProgram& program : workload.stages) stages_.push_back(index_stage(program));
    const auto pp = static_cast<std::size_t>(workload.plan.pp);
    cell_units_.resize(static_cast<std::size_t>(workload.plan.replicas()) * pp);
    std::size_t offset = 0;
    for (std::size_t u = 0; u < trace.units.size(); ++u) {
      const backend::TraceUnit& unit = trace.units[u];
      MEGASIM_ASSERT(unit.stage >= 0 && static_cast<std::size_t>(unit.stage) < workload.stages.size() &&
                         unit.replica >= 0 && unit.replica < workload.plan.replicas(),
                     "trace unit outside the plan");
      MEGASIM_ASSERT(unit.records.size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                     "trace unit records do not match its stage program");
      cell_units_[cell(unit.replica, unit.stage)].push_back(u);
      offsets_.push_back(offset);
      offset += unit.records.size();
    }
    visited_.assign(offset, false);
  }

  std::vector<TaskRef> walk() {
    std::vector<TaskRef> chain;
    std::optional<TaskRef> at = last_task();
    while (at && !visited_[flat(*at)]) {
      visited_[flat(*at)] = true;
      chain.push_back(*at);
      at = step(*at);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

 private:
  struct Best {
    std::optional<TaskRef> ref;
    SimTime time = 0;
    // Strictly later only: on a tie the first candidate (local ones come first) stays.
    void consider(TaskRef candidate, SimTime t) {
      if (!ref || t > time) {
        ref = candidate;
        time = t;
      }
    }
  };

  [[nodiscard]] std::size_t cell(std::int64_t replica, std::int64_t stage) const {
    return static_cast<std::size_t>(replica * workload_.plan.pp + stage);
  }
  [[nodiscard]] std::size_t flat(TaskRef r) const { return offsets_[r.unit] + static_cast<std::size_t>(r.task); }
  [[nodiscard]] const backend::TaskRecord& rec(TaskRef r) const {
    return trace_.units[r.unit].records[static_cast<std::size_t>(r.task)];
  }
  [[nodiscard]] const models::Task& task(TaskRef r) const {
    const auto stage = static_cast<std::size_t>(trace_.units[r.unit].stage);
    return workload_.stages[stage].tasks[static_cast<std::size_t>(r.task)];
  }

  [[nodiscard]] std::optional<TaskRef> last_task() const {
    std::optional<TaskRef> best;
    for (std::size_t u = 0; u < trace_.units.size(); ++u) {
      for (std::size_t i = 0; i < trace_.units[u].records.size(); ++i) {
        const TaskRef ref{u, static_cast<std::int32_t>(i)};
        if (!best || rec(ref).end > rec(*best).end) best = ref;
      }
    }
    return best;
  }

  [[nodiscard]] std::optional<TaskRef> step(TaskRef at) const {
    const models::Task& t = task(at);
    const backend::TaskRecord& r = rec(at);
    Best best;
    for (const std::int32_t dep : t.deps) best.consider({at.unit, dep}, rec({at.unit, dep}).end);
    const auto stage = static_cast<std::size_t>(trace_.units[at.unit].stage);
    const std::int32_t prev = stages_[stage].stream_prev[static_cast<std::size_t>(at.task)];
    if (prev >= 0) {
      const backend::TaskRecord& p = rec({at.unit, prev});
      best.consider({at.unit, prev}, t.stream == models::StreamKind::kPp ? p.start : p.end);
    }
    if (t.kind != models::TaskKind::kCompute && r.transfer_start > r.start) {
      for (const TaskRef& peer : peers(at)) {
        if (rec(peer).start > r.start) best.consider(peer, rec(peer).start);
      }
    }
    return best.ref;
  }

  // The tasks taking part in the same transfer on other units.
  [[nodiscard]] std::vector<TaskRef> peers(TaskRef at) const {
    const models::Task& t = task(at);
    const backend::TraceUnit& unit = trace_.units[at.unit];
    std::vector<TaskRef> out;
    if (t.kind == models::TaskKind::kDpCollective) {
      for (std::int64_t replica = 0; replica < workload_.plan.replicas(); ++replica) {
        if (replica == unit.replica) continue;
        for (const std::size_t u : cell_units_[cell(replica, unit.stage)]) out.push_back({u, at.task});
      }
      return out;
    }
    const std::int64_t pp = workload_.plan.pp;
    const std::int64_t peer_stage = ((unit.stage + t.peer_offset) % pp + pp) % pp;
    const StageIndex& index = stages_[static_cast<std::size_t>(peer_stage)];
    const std::int32_t match = find_tag(t.kind == models::TaskKind::kPpSend ? index.recvs : index.sends, t.tag);
    if (match < 0) return out;
    for (const std::size_t u : cell_units_[cell(unit.replica, peer_stage)]) out.push_back({u, match});
    return out;
  }

  const models::Workload& workload_;
  const backend::Trace& trace_;
  std::vector<StageIndex> stages_;
  std::vector<std::vector<std::size_t>> cell_units_;  // index replica * pp + stage
  std::vector<std::size_t> offsets_;                  // first flat record index of each unit
  std::vector<bool> visited_;
};

std::string suffix(const models::Task& task) {
  std::string out;
  if (task.microbatch >= 0) out += fmt::format(" mb{}", task.microbatch);
  if (task.chunk >= 0) out += fmt::format(" c{}", task.chunk);
  return out;
}

}  // namespace

std::vector<TaskRef> critical_chain(const models::Workload& workload, const backend::Trace& trace) {
  return ChainWalker(workload, trace).walk();
}

std::string task_name(const models::Task& task) {
  using models::TaskCategory;
  switch (task.kind) {
    case models::TaskKind::kPpSend:
    case models::TaskKind::kPpRecv: {
      const bool send = task.kind == models::TaskKind::kPpSend;
      const std::string_view what = task.category == TaskCategory::kPipelineForward    ? "fwd"
                                    : task.category == TaskCategory::kPipelineBackward ? "bwd"
                                                                                       : "embedding grad";
      return fmt::format("pp {} {}{}", send ? "send" : "recv", what, suffix(task));
    }
    case models::TaskKind::kDpCollective:
      return fmt::format("dp {}{}", models::to_string(task.op), suffix(task));
    case models::TaskKind::kCompute:
      break;
  }
  switch (task.category) {
    case TaskCategory::kForward:
      return "F" + suffix(task);
    case TaskCategory::kBackward:
      return "B" + suffix(task);
    case TaskCategory::kOptimizer:
      return "optimizer" + suffix(task);
    case TaskCategory::kDataLoading:
      return "data loading" + suffix(task);
    case TaskCategory::kHostSync:
      return "host sync" + suffix(task);
    default:
      return "compute" + suffix(task);
  }
}

}  // namespace megasim::scenarios
