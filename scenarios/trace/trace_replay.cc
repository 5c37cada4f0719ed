#include "scenarios/trace/trace_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "scenarios/config/plural.h"
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
// predecessors' plus its own `add` (a duration on E nodes). Built once, then frozen (successor lists
// and a topological order), it is solved for as many sets of `add` as the what-ifs need.
class Graph {
 public:
  std::int32_t add_node(SimTime add) {
    add_.push_back(add);
    return static_cast<std::int32_t>(add_.size() - 1);
  }
  void edge(std::int32_t from, std::int32_t to) { edges_.emplace_back(from, to); }
  void set_add(std::int32_t node, SimTime add) { add_[static_cast<std::size_t>(node)] = add; }
  [[nodiscard]] const std::vector<SimTime>& adds() const { return add_; }

  // Builds the successor lists and the topological order, dropping the edge list; false when the
  // graph has a cycle (the schedule would deadlock).
  bool freeze() {
    const std::size_t n = add_.size();
    begin_.assign(n + 1, 0);
    std::vector<std::int32_t> indegree(n, 0);
    for (const auto& [from, to] : edges_) {
      ++begin_[static_cast<std::size_t>(from) + 1];
      ++indegree[static_cast<std::size_t>(to)];
    }
    for (std::size_t i = 0; i < n; ++i) begin_[i + 1] += begin_[i];
    succ_.resize(edges_.size());
    {
      std::vector<std::int32_t> fill(begin_.begin(), begin_.end() - 1);
      for (const auto& [from, to] : edges_) {
        succ_[static_cast<std::size_t>(fill[static_cast<std::size_t>(from)]++)] = to;
      }
    }
    edges_ = {};
    order_.clear();
    order_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (indegree[i] == 0) order_.push_back(static_cast<std::int32_t>(i));
    }
    for (std::size_t head = 0; head < order_.size(); ++head) {
      const auto v = static_cast<std::size_t>(order_[head]);
      for (auto e = static_cast<std::size_t>(begin_[v]); e < static_cast<std::size_t>(begin_[v + 1]); ++e) {
        const auto s = static_cast<std::size_t>(succ_[e]);
        if (--indegree[s] == 0) order_.push_back(static_cast<std::int32_t>(s));
      }
    }
    return order_.size() == n;
  }

  // Node times with `add` (one per node) in place of the built ones; after freeze().
  void solve(const std::vector<SimTime>& add, std::vector<SimTime>& time) const {
    time.assign(add.size(), 0);  // the latest predecessor's time until a node is reached
    for (const std::int32_t node : order_) {
      const auto v = static_cast<std::size_t>(node);
      time[v] += add[v];
      for (auto e = static_cast<std::size_t>(begin_[v]); e < static_cast<std::size_t>(begin_[v + 1]); ++e) {
        SimTime& ready = time[static_cast<std::size_t>(succ_[e])];
        ready = std::max(ready, time[v]);
      }
    }
  }

 private:
  std::vector<SimTime> add_;
  std::vector<std::pair<std::int32_t, std::int32_t>> edges_;
  std::vector<std::int32_t> begin_;  // successors of v: succ_[begin_[v], begin_[v + 1])
  std::vector<std::int32_t> succ_;
  std::vector<std::int32_t> order_;  // topological
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

struct TraceReplay::Impl {
  Graph graph;
  std::vector<std::size_t> base;         // S node of (u, i) = 2 * (base[u] + i), E node + 1
  std::vector<std::int32_t> rendezvous;  // per (u, i) at base[u] + i: its R node, -1 for none

  [[nodiscard]] std::int32_t S(std::size_t u, std::size_t i) const {
    return static_cast<std::int32_t>(2 * (base[u] + i));
  }
  [[nodiscard]] std::int32_t E(std::size_t u, std::size_t i) const { return S(u, i) + 1; }
};

TraceReplay::TraceReplay(const models::Workload& w, const backend::Trace& trace)
    : workload_(w), trace_(trace), impl_(std::make_unique<Impl>()) {
  check_coverage(w, trace);
  const std::size_t units = trace.units.size();
  const std::int64_t tp = std::max<std::int64_t>(1, w.plan.tp);
  const auto pp = static_cast<std::int64_t>(w.stages.size());
  std::map<Lane, std::size_t> by_lane;
  std::map<std::pair<std::int32_t, std::int64_t>, std::vector<std::size_t>> dp_groups;  // (stage, tp rank)
  for (std::size_t u = 0; u < units; ++u) {
    const Lane lane = lane_of(trace.units[u], tp);
    by_lane.emplace(lane, u);
    dp_groups[{std::get<0>(lane), std::get<2>(lane)}].push_back(u);
  }

  // The first recv of each (tag, peer stage) of each stage program: a send's partner.
  std::vector<std::map<std::pair<std::int64_t, std::int32_t>, std::size_t>> recvs(w.stages.size());
  for (std::size_t stage = 0; stage < w.stages.size(); ++stage) {
    const auto& tasks = w.stages[stage].tasks;
    for (std::size_t j = 0; j < tasks.size(); ++j) {
      if (tasks[j].kind != models::TaskKind::kPpRecv) continue;
      recvs[stage].emplace(std::pair{tasks[j].tag, peer_stage(static_cast<std::int32_t>(stage), tasks[j], pp)}, j);
    }
  }

  Graph& g = impl_->graph;
  std::vector<std::size_t>& base = impl_->base;
  base.assign(units + 1, 0);
  for (std::size_t u = 0; u < units; ++u) base[u + 1] = base[u] + trace.units[u].records.size();
  const auto S = [this](std::size_t u, std::size_t i) { return impl_->S(u, i); };
  const auto E = [this](std::size_t u, std::size_t i) { return impl_->E(u, i); };
  for (std::size_t n = 0; n < 2 * base[units]; ++n) g.add_node(0);
  std::vector<std::int32_t>& rendezvous = impl_->rendezvous;
  rendezvous.assign(base[units], -1);

  for (std::size_t u = 0; u < units; ++u) {
    const backend::TraceUnit& unit = trace.units[u];
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
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
        g.edge(S(u, i), E(u, i));  // E's add: the duration, set by each replay
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
      const auto& peer_recvs = recvs[static_cast<std::size_t>(std::get<0>(peer_lane))];
      const auto recv = peer_recvs.find({t.tag, unit.stage});
      MEGASIM_ASSERT(recv != peer_recvs.end(), "a send has no recv with its tag on the peer stage");
      const std::size_t j = recv->second;
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
    if (std::cmp_not_equal(members.size(), w.plan.replicas())) {
      throw sim::ConfigError("trace", fmt::format("{} of stage {}", counted(members.size(), "unit"), key.first),
                             fmt::format("the {} data-parallel replicas of every stage", w.plan.replicas()));
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

  MEGASIM_ASSERT(g.freeze(), "the replayed schedule has a cycle");
}

TraceReplay::~TraceReplay() = default;

std::vector<SimTime> TraceReplay::solve(const ComputeDurations& durations) const {
  const std::size_t units = trace_.units.size();
  if (durations.size() != units) {
    throw sim::ConfigError("trace.durations", fmt::format("{} units", durations.size()), fmt::format("{}", units));
  }
  std::vector<SimTime> add = impl_->graph.adds();
  for (std::size_t u = 0; u < units; ++u) {
    const auto& tasks = workload_.stages[static_cast<std::size_t>(trace_.units[u].stage)].tasks;
    if (durations[u].size() != tasks.size()) {
      throw sim::ConfigError("trace.durations", fmt::format("{} tasks for unit {}", durations[u].size(), u),
                             fmt::format("{}", tasks.size()));
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind != models::TaskKind::kCompute) continue;
      if (durations[u][i] < 0) {
        throw sim::ConfigError("trace.durations", fmt::format("{} ns", durations[u][i]), "a duration >= 0");
      }
      add[static_cast<std::size_t>(impl_->E(u, i))] = durations[u][i];
    }
  }
  std::vector<SimTime> time;
  impl_->graph.solve(add, time);
  return time;
}

SimTime TraceReplay::iteration_time(const ComputeDurations& durations) const {
  const std::vector<SimTime> time = solve(durations);
  SimTime last = 0;
  for (std::size_t n = 0; n < 2 * impl_->base.back(); n += 2) last = std::max(last, time[n + 1]);  // E nodes
  return last;
}

backend::Trace TraceReplay::replay(const ComputeDurations& durations) const {
  const std::vector<SimTime> time = solve(durations);
  backend::Trace out;
  out.backend = trace_.backend;
  out.units = trace_.units;
  for (std::size_t u = 0; u < out.units.size(); ++u) {
    for (std::size_t i = 0; i < out.units[u].records.size(); ++i) {
      backend::TaskRecord& rec = out.units[u].records[i];
      rec.start = time[static_cast<std::size_t>(impl_->S(u, i))];
      rec.end = time[static_cast<std::size_t>(impl_->E(u, i))];
      const std::int32_t r = impl_->rendezvous[impl_->base[u] + i];
      rec.transfer_start = r < 0 ? rec.start : time[static_cast<std::size_t>(r)];
      rec.tp_exposed = std::min(rec.tp_exposed, rec.end - rec.start);
      out.iteration_time = std::max(out.iteration_time, rec.end);
    }
  }
  return out;
}

backend::Trace replay_trace(const models::Workload& w, const backend::Trace& trace, const ComputeDurations& durations) {
  return TraceReplay(w, trace).replay(durations);
}

}  // namespace megasim::scenarios
