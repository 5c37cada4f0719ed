#include "scenarios/trace_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

bool is_p2p(const models::Task& t) {
  return t.kind == models::TaskKind::kPpSend || t.kind == models::TaskKind::kPpRecv;
}

std::int32_t peer_stage(std::int32_t stage, const models::Task& t, std::int64_t pp) {
  return static_cast<std::int32_t>(((stage + t.peer_offset) % pp + pp) % pp);
}

// Longest-path evaluation of the iteration's timing graph. Every task has a start node S (posted,
// issued or started) and an end node E; every transfer (a PP pair, or one DP call of a group) has a
// rendezvous node R, the instant data begins to move. A node's time is the latest of its
// predecessors' plus its own `add` (a duration on E nodes).
class Graph {
 public:
  std::int32_t add_node(SimTime add) {
    add_.push_back(add);
    return static_cast<std::int32_t>(add_.size() - 1);
  }
  void edge(std::int32_t from, std::int32_t to) { edges_.emplace_back(from, to); }
  void set_add(std::int32_t node, SimTime add) { add_[static_cast<std::size_t>(node)] = add; }

  // Node times; false when the graph has a cycle (the schedule would deadlock).
  bool solve(std::vector<SimTime>& time) const {
    const std::size_t n = add_.size();
    std::vector<std::int32_t> begin(n + 1, 0);
    std::vector<std::int32_t> indegree(n, 0);
    for (const auto& [from, to] : edges_) {
      ++begin[static_cast<std::size_t>(from) + 1];
      ++indegree[static_cast<std::size_t>(to)];
    }
    for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    std::vector<std::int32_t> succ(edges_.size());
    std::vector<std::int32_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& [from, to] : edges_) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(from)]++)] = to;
    std::vector<SimTime> ready(n, 0);
    std::vector<std::int32_t> queue;
    for (std::size_t i = 0; i < n; ++i) {
      if (indegree[i] == 0) queue.push_back(static_cast<std::int32_t>(i));
    }
    time.assign(n, 0);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const auto v = static_cast<std::size_t>(queue[head]);
      time[v] = ready[v] + add_[v];
      for (auto e = static_cast<std::size_t>(begin[v]); e < static_cast<std::size_t>(begin[v + 1]); ++e) {
        const auto s = static_cast<std::size_t>(succ[e]);
        ready[s] = std::max(ready[s], time[v]);
        if (--indegree[s] == 0) queue.push_back(static_cast<std::int32_t>(s));
      }
    }
    return queue.size() == n;
  }

 private:
  std::vector<SimTime> add_;
  std::vector<std::pair<std::int32_t, std::int32_t>> edges_;
};

// (stage, replica, TP rank) of a unit; TP rank -1 for a unit holding a whole TP group.
using Lane = std::tuple<std::int32_t, std::int32_t, std::int64_t>;

Lane lane_of(const backend::TraceUnit& unit, std::int64_t tp) {
  return {unit.stage, unit.replica, unit.ranks.size() == 1 ? unit.ranks.front() % tp : -1};
}

void check_coverage(const models::Workload& w, const backend::Trace& trace) {
  std::vector<int> seen(static_cast<std::size_t>(w.plan.world_size), 0);
  for (const backend::TraceUnit& unit : trace.units) {
    if (unit.stage < 0 || static_cast<std::size_t>(unit.stage) >= w.stages.size() ||
        unit.records.size() != w.stages[static_cast<std::size_t>(unit.stage)].tasks.size() || unit.ranks.empty()) {
      throw sim::ConfigError("trace", fmt::format("a unit of stage {}", unit.stage),
                             "units of the plan's stages with one record per task of their stage program");
    }
    for (const std::int64_t r : unit.ranks) {
      if (r < 0 || r >= w.plan.world_size || seen[static_cast<std::size_t>(r)]++ > 0) {
        throw sim::ConfigError("trace", fmt::format("rank {}", r), "every rank of the plan exactly once");
      }
    }
  }
  if (std::count(seen.begin(), seen.end(), 0) > 0) {
    throw sim::ConfigError("trace", fmt::format("{} of {} ranks", std::count(seen.begin(), seen.end(), 1), seen.size()),
                           "every rank of the plan (a complete trace)");
  }
}

// How long a transfer moved data on one side: from the later of its recorded transfer_start and
// `begin` (when every side had posted or issued it, as recorded) to its end. The simulator records
// transfer_start = begin already; a real backend's DP calls record transfer_start = their own
// issue, which includes the wait for the last replica, not part of the transfer.
SimTime transfer_ns(const backend::TaskRecord& r, SimTime begin) {
  return std::max<SimTime>(0, r.end - std::max(r.transfer_start, begin));
}

}  // namespace

ComputeDurations compute_durations(const models::Workload& workload, const backend::Trace& trace) {
  ComputeDurations out(trace.units.size());
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    const auto& tasks = workload.stages[static_cast<std::size_t>(unit.stage)].tasks;
    out[u].assign(tasks.size(), 0);
    for (std::size_t i = 0; i < tasks.size() && i < unit.records.size(); ++i) {
      if (tasks[i].kind == models::TaskKind::kCompute) out[u][i] = unit.records[i].end - unit.records[i].start;
    }
  }
  return out;
}

backend::Trace replay_trace(const models::Workload& w, const backend::Trace& trace, const ComputeDurations& durations) {
  check_coverage(w, trace);
  const std::size_t units = trace.units.size();
  if (durations.size() != units) {
    throw sim::ConfigError("trace.durations", fmt::format("{} units", durations.size()), fmt::format("{}", units));
  }
  const std::int64_t tp = std::max<std::int64_t>(1, w.plan.tp);
  const auto pp = static_cast<std::int64_t>(w.stages.size());
  std::map<Lane, std::size_t> by_lane;
  std::map<std::pair<std::int32_t, std::int64_t>, std::vector<std::size_t>> dp_groups;  // (stage, tp rank)
  for (std::size_t u = 0; u < units; ++u) {
    const Lane lane = lane_of(trace.units[u], tp);
    by_lane.emplace(lane, u);
    dp_groups[{std::get<0>(lane), std::get<2>(lane)}].push_back(u);
  }

  Graph g;
  std::vector<std::size_t> base(units + 1, 0);  // S node of (u, i) = 2 * (base[u] + i), E node + 1
  for (std::size_t u = 0; u < units; ++u) base[u + 1] = base[u] + trace.units[u].records.size();
  const auto S = [&](std::size_t u, std::size_t i) { return static_cast<std::int32_t>(2 * (base[u] + i)); };
  const auto E = [&](std::size_t u, std::size_t i) { return S(u, i) + 1; };
  for (std::size_t n = 0; n < 2 * base[units]; ++n) g.add_node(0);
  std::vector<std::int32_t> rendezvous(base[units], -1);

  for (std::size_t u = 0; u < units; ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
    if (durations[u].size() != tasks.size()) {
      throw sim::ConfigError("trace.durations", fmt::format("{} tasks for unit {}", durations[u].size(), u),
                             fmt::format("{}", tasks.size()));
    }
    std::map<models::StreamKind, std::size_t> last_on_stream;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const models::Task& t = tasks[i];
      for (const std::int32_t d : t.deps) g.edge(E(u, static_cast<std::size_t>(d)), S(u, i));
      if (const auto it = last_on_stream.find(t.stream); it != last_on_stream.end()) {
        // A posted send or recv frees its stream at once; compute and DP calls hold it to their end.
        const std::size_t p = it->second;
        g.edge(is_p2p(tasks[p]) ? S(u, p) : E(u, p), S(u, i));
      }
      last_on_stream[t.stream] = i;
      if (t.kind == models::TaskKind::kCompute) {
        if (durations[u][i] < 0) {
          throw sim::ConfigError("trace.durations", fmt::format("{} ns", durations[u][i]), "a duration >= 0");
        }
        g.edge(S(u, i), E(u, i));
        g.set_add(E(u, i), durations[u][i]);
        continue;
      }
      if (t.kind != models::TaskKind::kPpSend) continue;
      const Lane peer_lane{peer_stage(unit.stage, t, pp), unit.replica, std::get<2>(lane_of(unit, tp))};
      const auto peer = by_lane.find(peer_lane);
      if (peer == by_lane.end()) {
        throw sim::ConfigError("trace", fmt::format("stage {} replica {}", std::get<0>(peer_lane), unit.replica),
                               "the peer unit of every pipeline send");
      }
      const std::size_t v = peer->second;
      const auto& peer_tasks = w.stages[static_cast<std::size_t>(std::get<0>(peer_lane))].tasks;
      std::size_t j = 0;
      while (j < peer_tasks.size() && !(peer_tasks[j].kind == models::TaskKind::kPpRecv && peer_tasks[j].tag == t.tag &&
                                        peer_stage(std::get<0>(peer_lane), peer_tasks[j], pp) == unit.stage)) {
        ++j;
      }
      MEGASIM_ASSERT(j < peer_tasks.size(), "a send has no recv with its tag on the peer stage");
      const std::int32_t r = g.add_node(0);
      const backend::TaskRecord& mine = unit.records[i];
      const backend::TaskRecord& theirs = trace.units[v].records[j];
      const SimTime begin = std::max(mine.start, theirs.start);
      const SimTime length = std::max(transfer_ns(mine, begin), transfer_ns(theirs, begin));
      for (const auto& [x, k] : {std::pair{u, i}, std::pair{v, j}}) {
        g.edge(S(x, k), r);
        g.edge(r, E(x, k));
        g.set_add(E(x, k), length);
        rendezvous[base[x] + k] = r;
      }
    }
  }

  for (const auto& [key, members] : dp_groups) {
    const auto& tasks = w.stages[static_cast<std::size_t>(key.first)].tasks;
    if (std::cmp_not_equal(members.size(), w.plan.dp)) {
      throw sim::ConfigError("trace", fmt::format("{} unit(s) of stage {}", members.size(), key.first),
                             fmt::format("the {} data-parallel replicas of every stage", w.plan.dp));
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kDpCollective) continue;
      const std::int32_t r = g.add_node(0);
      SimTime begin = 0;
      for (const std::size_t u : members) begin = std::max(begin, trace.units[u].records[i].start);
      SimTime length = 0;
      for (const std::size_t u : members) length = std::max(length, transfer_ns(trace.units[u].records[i], begin));
      for (const std::size_t u : members) {
        g.edge(S(u, i), r);
        g.edge(r, E(u, i));
        g.set_add(E(u, i), length);
        rendezvous[base[u] + i] = r;
      }
    }
  }

  std::vector<SimTime> time;
  MEGASIM_ASSERT(g.solve(time), "the replayed schedule has a cycle");
  backend::Trace out;
  out.backend = trace.backend;
  out.units = trace.units;
  for (std::size_t u = 0; u < units; ++u) {
    for (std::size_t i = 0; i < out.units[u].records.size(); ++i) {
      backend::TaskRecord& rec = out.units[u].records[i];
      rec.start = time[static_cast<std::size_t>(S(u, i))];
      rec.end = time[static_cast<std::size_t>(E(u, i))];
      const std::int32_t r = rendezvous[base[u] + i];
      rec.transfer_start = r < 0 ? rec.start : time[static_cast<std::size_t>(r)];
      rec.tp_exposed = std::min(rec.tp_exposed, rec.end - rec.start);
      out.iteration_time = std::max(out.iteration_time, rec.end);
    }
  }
  return out;
}

}  // namespace megasim::scenarios
