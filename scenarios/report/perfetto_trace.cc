#include "scenarios/report/perfetto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>

#include "scenarios/config/embedded_scenario.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/report/iteration_report.h"
#include "scenarios/report/perfetto_flows.h"
#include "scenarios/report/perfetto_tracks.h"
#include "sim/error.h"
#include "sim/repeats.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

double to_us(SimTime t) {
  return static_cast<double>(t) / 1e3;
}

// TP collective calls made by one run of a compute task.
std::int64_t tp_calls(const models::Workload& workload, const models::Task& task) {
  std::int64_t calls = 0;
  for (const models::Task::KernelRun& run : task.runs) {
    if (run.kernels < 0) continue;
    for (const models::TpCollective& c : workload.kernels.at(static_cast<std::size_t>(run.kernels)).tp_collectives) {
      calls += static_cast<std::int64_t>(run.repeat) * c.count;
    }
  }
  return calls;
}

// An "X" event up to its open args object; finish_event closes it. The pid is written by the
// caller, so a unit's events are built once for all of its ranks.
JsonWriter begin_event(std::string_view name, std::string_view category, int tid, EventSpan span, std::int32_t stage,
                       const models::Task& task) {
  JsonWriter w(0);
  w.begin_object();
  w.field("tid", tid).field("ph", "X").field("name", name).field("cat", category);
  w.field("ts", to_us(span.begin)).field("dur", to_us(span.end - span.begin));
  w.key("args").begin_object();
  w.field("stage", stage).field("microbatch", task.microbatch).field("chunk", task.chunk);
  return w;
}

// The event without its opening brace: `"tid":...}`; args.task is the task's index in its stage
// program (what the trace reader matches records by).
std::string finish_event(JsonWriter& w, std::size_t task) {
  w.field("task", static_cast<std::int64_t>(task));
  w.end_object().end_object();
  return w.str().substr(1);
}

std::vector<std::string> unit_events(const models::Workload& workload, const backend::TraceUnit& unit,
                                     const UnitTracks& tracks) {
  const models::StageProgram& program = workload.stages[static_cast<std::size_t>(unit.stage)];
  std::vector<std::string> events;
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    const models::Task& t = program.tasks[i];
    const backend::TaskRecord& r = unit.records[i];
    const std::string name = task_name(t);
    const std::string_view category = models::to_string(t.category);
    const EventSpan span = event_span(t, r);
    JsonWriter w = begin_event(name, category, tracks.tid[i], span, unit.stage, t);
    if (t.kind == models::TaskKind::kCompute) {
      w.field("tp_exposed_us", to_us(r.tp_exposed));
      events.push_back(finish_event(w, i));
      const std::int64_t calls = tp_calls(workload, t);
      if (calls == 0) continue;
      // The tp lane of the task's compute lane (perfetto_tracks.h).
      const int tp_tid = tracks.tid[i] + static_cast<int>(models::StreamKind::kTp);
      JsonWriter tp = begin_event("tp " + name, category, tp_tid, span, unit.stage, t);
      tp.field("calls", calls).field("exposed_us", to_us(r.tp_exposed));
      events.push_back(finish_event(tp, i));
    } else {
      w.field("posted_us", to_us(r.start)).field("bytes", t.bytes);
      events.push_back(finish_event(w, i));
    }
  }
  return events;
}

// A flow event ("s" or "f", perfetto_flows.h) at the middle of `span` on (pid, tid).
std::string flow_event(std::int64_t pid, int tid, bool start, std::int64_t id, std::string_view name, EventSpan span) {
  JsonWriter w(0);
  w.begin_object();
  w.field("pid", pid).field("tid", tid).field("ph", start ? "s" : "f");
  if (!start) w.field("bp", "e");
  w.field("id", id).field("name", name).field("cat", "pp_flow");
  w.field("ts", to_us(span.begin + (span.end - span.begin) / 2));
  w.end_object();
  return w.str();
}

std::string metadata(std::int64_t pid, int tid, std::string_view kind, std::string_view name) {
  JsonWriter w(0);
  w.begin_object();
  w.field("pid", pid).field("tid", tid).field("ph", "M").field("name", kind);
  w.key("args").begin_object().field("name", name).end_object();
  w.end_object();
  return w.str();
}

// (rank, unit index) of the selected ranks, ascending by rank.
std::vector<std::pair<std::int64_t, std::size_t>> select(const models::Workload& workload, const backend::Trace& trace,
                                                         const TraceFilter& filter) {
  if (filter.max_ranks < 0) {
    throw sim::ConfigError("trace.max_ranks", std::to_string(filter.max_ranks),
                           "0 (no limit) or a positive number of ranks");
  }
  const std::int64_t world = workload.plan.world_size;
  for (const std::int64_t rank : filter.ranks) {
    if (rank < 0 || rank >= world) {
      throw sim::ConfigError("trace.ranks", std::to_string(rank), fmt::format("ranks 0 to {}", world - 1));
    }
  }
  if (const std::optional<std::size_t> k = sim::first_repeat(filter.ranks)) {
    throw sim::ConfigError("trace.ranks", std::to_string(filter.ranks[*k]),
                           "each rank at most once (it is listed twice)");
  }
  std::vector<std::int64_t> wanted = filter.ranks;
  std::sort(wanted.begin(), wanted.end());
  std::vector<std::pair<std::int64_t, std::size_t>> out;
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    for (const std::int64_t rank : trace.units[u].ranks) {
      if (wanted.empty() || std::binary_search(wanted.begin(), wanted.end(), rank)) out.emplace_back(rank, u);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            out.end());
  // A listed rank is written, or refused: never silently left out.
  if (!wanted.empty() && out.size() != wanted.size()) {
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      if (i >= out.size() || out[i].first != wanted[i]) {
        throw sim::ConfigError(
            "trace.ranks", std::to_string(wanted[i]),
            fmt::format("a rank this {} trace recorded ({} of the job's {} ranks)", trace.backend, out.size(), world));
      }
    }
  }
  if (wanted.empty() && filter.max_ranks > 0 && std::cmp_greater(out.size(), filter.max_ranks)) {
    // Keep whole pipelines: TP rank 0 of every stage of replica 0, then of replica 1, ...
    const models::ParallelLayout layout = workload.plan.layout();
    const auto key = [&](const std::pair<std::int64_t, std::size_t>& x) {
      const backend::TraceUnit& unit = trace.units[x.second];
      return std::make_tuple(layout.tp_rank(x.first), unit.replica, unit.stage, x.first);
    };
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
    out.resize(static_cast<std::size_t>(filter.max_ranks));
    std::sort(out.begin(), out.end());
  }
  return out;
}

// The written ranks grouped by their unit, units ascending by index, ranks ascending.
std::vector<WrittenUnit> group_by_unit(const std::vector<std::pair<std::int64_t, std::size_t>>& ranks) {
  std::map<std::size_t, std::vector<std::int64_t>> units;  // unit -> its written ranks
  for (const auto& [rank, u] : ranks) units[u].push_back(rank);
  std::vector<WrittenUnit> out;
  for (auto& [u, unit_ranks] : units) out.push_back({.unit = u, .ranks = std::move(unit_ranks)});
  return out;
}

// The "megasim" object: what the trace reader (trace_file.h) needs to rebuild the workload and the
// Trace: the scenario's keys, the backend, the iteration time and the units of the written ranks.
std::string megasim_object(const backend::Trace& trace, const std::vector<std::pair<std::int64_t, std::size_t>>& ranks,
                           const Scenario* scenario) {
  JsonWriter w(0);
  w.begin_object().field("version", 1).field("backend", trace.backend);
  w.field("iteration_time_ns", static_cast<std::int64_t>(trace.iteration_time));
  if (scenario != nullptr) write_scenario_keys(w.key("scenario"), *scenario);
  w.key("units").begin_array();
  for (const WrittenUnit& unit : group_by_unit(ranks)) {
    w.begin_object().key("ranks").begin_array();
    for (const std::int64_t rank : unit.ranks) w.value(rank);
    const backend::TraceUnit& u = trace.units[unit.unit];
    w.end_array().field("stage", u.stage).field("replica", u.replica).end_object();
  }
  w.end_array().end_object();
  return w.str();
}

}  // namespace

std::vector<std::int64_t> selected_ranks(const models::Workload& workload, const backend::Trace& trace,
                                         const TraceFilter& filter) {
  std::vector<std::int64_t> ranks;
  for (const auto& [rank, unit] : select(workload, trace, filter)) ranks.push_back(rank);
  return ranks;
}

std::vector<WrittenUnit> written_units(const models::Workload& workload, const backend::Trace& trace,
                                       const TraceFilter& filter) {
  return group_by_unit(select(workload, trace, filter));
}

namespace {

// The tracks and events of each written unit, built once for all of its ranks, and the flows
// between written ranks.
class TraceWriter {
 public:
  TraceWriter(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
              const std::vector<std::pair<std::int64_t, std::size_t>>& ranks)
      : out_(out),
        workload_(workload),
        trace_(trace),
        ranks_(ranks),
        layout_(workload.plan.layout()),
        pairs_(workload),
        tracks_(trace.units.size()) {
    for (const auto& [rank, u] : ranks) {
      const backend::TraceUnit& unit = trace.units[u];
      MEGASIM_ASSERT(unit.stage >= 0 && static_cast<std::size_t>(unit.stage) < workload.stages.size() &&
                         unit.records.size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                     "trace unit does not match the workload");
    }
    for (const models::StageProgram& program : workload.stages) {
      max_tasks_ = std::max<std::int64_t>(max_tasks_, static_cast<std::int64_t>(program.tasks.size()));
    }
  }

  void write_events() {
    std::size_t cached_unit = trace_.units.size();
    std::vector<std::string> events;
    for (const auto& [rank, u] : ranks_) {
      const backend::TraceUnit& unit = trace_.units[u];
      if (u != cached_unit) {
        events = unit_events(workload_, unit, tracks(u));
        cached_unit = u;
      }
      emit({}, metadata(rank, 0, "process_name",
                        fmt::format("rank {} (stage {}, replica {}, tp {})", rank, unit.stage, unit.replica,
                                    layout_.tp_rank(rank))));
      for (const auto& [tid, name] : tracks(u).threads) emit({}, metadata(rank, tid, "thread_name", name));
      const std::string prefix = fmt::format("{{\"pid\":{},", rank);
      for (const std::string& body : events) emit(prefix, body);
      write_flows(rank, u);
    }
  }

 private:
  void emit(std::string_view prefix, std::string_view event) {
    out_ << separator_ << prefix << event;
    separator_ = ",\n";
  }

  const UnitTracks& tracks(std::size_t u) {
    if (!tracks_[u]) {
      const backend::TraceUnit& unit = trace_.units[u];
      tracks_[u] = unit_tracks(workload_.stages[static_cast<std::size_t>(unit.stage)], unit);
    }
    return *tracks_[u];
  }

  // The unit of a written rank; none when the rank is not written.
  [[nodiscard]] std::optional<std::size_t> written_unit(std::int64_t rank) const {
    const auto it = std::lower_bound(ranks_.begin(), ranks_.end(), std::make_pair(rank, std::size_t{0}));
    if (it == ranks_.end() || it->first != rank) return std::nullopt;
    return it->second;
  }

  // The arrows from the sends of `rank` to their recvs, when the receiving rank is written too.
  void write_flows(std::int64_t rank, std::size_t u) {
    const backend::TraceUnit& unit = trace_.units[u];
    const models::StageProgram& program = workload_.stages[static_cast<std::size_t>(unit.stage)];
    for (std::size_t i = 0; i < program.tasks.size(); ++i) {
      const std::int32_t recv = pairs_.recv_of(unit.stage, i);
      if (recv < 0) continue;
      const std::int32_t peer_stage = pairs_.peer_stage(unit.stage, program.tasks[i]);
      const std::int64_t peer = layout_.rank_of(layout_.tp_rank(rank), layout_.dp_rank(rank), peer_stage);
      const std::optional<std::size_t> peer_unit = written_unit(peer);
      if (!peer_unit) continue;
      const backend::TraceUnit& to = trace_.units[*peer_unit];
      const models::Task& recv_task =
          workload_.stages[static_cast<std::size_t>(to.stage)].tasks[static_cast<std::size_t>(recv)];
      // Unique in the trace: one flow per (sending rank, send task).
      const std::int64_t id = rank * max_tasks_ + static_cast<std::int64_t>(i) + 1;
      const std::string name = task_name(program.tasks[i]);
      emit({}, flow_event(rank, tracks(u).tid[i], true, id, name, event_span(program.tasks[i], unit.records[i])));
      emit({}, flow_event(peer, tracks(*peer_unit).tid[static_cast<std::size_t>(recv)], false, id, name,
                          event_span(recv_task, to.records[static_cast<std::size_t>(recv)])));
    }
  }

  std::ostream& out_;
  const models::Workload& workload_;
  const backend::Trace& trace_;
  const std::vector<std::pair<std::int64_t, std::size_t>>& ranks_;
  const models::ParallelLayout layout_;
  const PpPairs pairs_;
  std::vector<std::optional<UnitTracks>> tracks_;  // by unit, built when first needed
  std::int64_t max_tasks_ = 0;
  const char* separator_ = "\n";
};

}  // namespace

void write_perfetto_trace(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
                          const TraceFilter& filter, const Scenario* scenario) {
  const std::vector<std::pair<std::int64_t, std::size_t>> ranks = select(workload, trace, filter);
  out << "{\"traceEvents\":[";
  TraceWriter(out, workload, trace, ranks).write_events();
  out << "\n],\"displayTimeUnit\":\"ns\",\n\"megasim\":" << megasim_object(trace, ranks, scenario) << "}\n";
}

std::string perfetto_trace_json(const models::Workload& workload, const backend::Trace& trace,
                                const TraceFilter& filter, const Scenario* scenario) {
  std::ostringstream out;
  write_perfetto_trace(out, workload, trace, filter, scenario);
  return out.str();
}

}  // namespace megasim::scenarios
