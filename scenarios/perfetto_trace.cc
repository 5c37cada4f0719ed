#include "scenarios/perfetto_trace.h"

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
#include <variant>

#include "scenarios/iteration_report.h"
#include "scenarios/json_writer.h"
#include "scenarios/keys.h"
#include "sim/error.h"
#include "sim/repeats.h"

namespace megasim::scenarios {
namespace {

using sim::SimTime;

constexpr std::array<models::StreamKind, 4> kStreams{models::StreamKind::kCompute, models::StreamKind::kTp,
                                                     models::StreamKind::kPp, models::StreamKind::kDp};

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
JsonWriter begin_event(std::string_view name, std::string_view category, models::StreamKind stream, SimTime begin,
                       SimTime end, std::int32_t stage, const models::Task& task) {
  JsonWriter w(0);
  w.begin_object();
  w.field("tid", static_cast<int>(stream)).field("ph", "X").field("name", name).field("cat", category);
  w.field("ts", to_us(begin)).field("dur", to_us(std::max<SimTime>(0, end - begin)));
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

std::vector<std::string> unit_events(const models::Workload& workload, const backend::TraceUnit& unit) {
  const models::StageProgram& program = workload.stages[static_cast<std::size_t>(unit.stage)];
  std::vector<std::string> events;
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    const models::Task& t = program.tasks[i];
    const backend::TaskRecord& r = unit.records[i];
    const std::string name = task_name(t);
    const std::string_view category = models::to_string(t.category);
    if (t.kind == models::TaskKind::kCompute) {
      JsonWriter w = begin_event(name, category, models::StreamKind::kCompute, r.start, r.end, unit.stage, t);
      w.field("tp_exposed_us", to_us(r.tp_exposed));
      events.push_back(finish_event(w, i));
      const std::int64_t calls = tp_calls(workload, t);
      if (calls == 0) continue;
      JsonWriter tp = begin_event("tp " + name, category, models::StreamKind::kTp, r.start, r.end, unit.stage, t);
      tp.field("calls", calls).field("exposed_us", to_us(r.tp_exposed));
      events.push_back(finish_event(tp, i));
    } else {
      JsonWriter w = begin_event(name, category, t.stream, r.transfer_start, r.end, unit.stage, t);
      w.field("posted_us", to_us(r.start)).field("bytes", t.bytes);
      events.push_back(finish_event(w, i));
    }
  }
  return events;
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
  if (filter.max_ranks > 0 && std::cmp_greater(out.size(), filter.max_ranks)) {
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

// The "megasim" object: what the trace reader (trace_file.h) needs to rebuild the workload and the
// Trace: the scenario's keys, the backend, the iteration time and the units of the written ranks.
std::string megasim_object(const backend::Trace& trace, const std::vector<std::pair<std::int64_t, std::size_t>>& ranks,
                           const Scenario* scenario) {
  JsonWriter w(0);
  w.begin_object().field("version", 1).field("backend", trace.backend);
  w.field("iteration_time_ns", static_cast<std::int64_t>(trace.iteration_time));
  if (scenario != nullptr) {
    w.key("scenario").begin_object();
    for (const KeySpec& key : key_table()) {
      w.key(key.full_name());
      std::visit([&w](const auto& x) { w.value(x); }, key.get(*scenario));
    }
    w.end_object();
  }
  std::map<std::size_t, std::vector<std::int64_t>> units;  // unit -> its written ranks
  for (const auto& [rank, u] : ranks) units[u].push_back(rank);
  w.key("units").begin_array();
  for (const auto& [u, unit_ranks] : units) {
    w.begin_object().key("ranks").begin_array();
    for (const std::int64_t rank : unit_ranks) w.value(rank);
    w.end_array().field("stage", trace.units[u].stage).field("replica", trace.units[u].replica).end_object();
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

void write_perfetto_trace(std::ostream& out, const models::Workload& workload, const backend::Trace& trace,
                          const TraceFilter& filter, const Scenario* scenario) {
  const std::vector<std::pair<std::int64_t, std::size_t>> ranks = select(workload, trace, filter);
  const models::ParallelLayout layout = workload.plan.layout();
  out << "{\"traceEvents\":[";
  const char* separator = "\n";
  const auto emit = [&](std::string_view prefix, std::string_view event) {
    out << separator << prefix << event;
    separator = ",\n";
  };
  std::size_t cached_unit = trace.units.size();
  std::vector<std::string> events;
  for (const auto& [rank, u] : ranks) {
    const backend::TraceUnit& unit = trace.units[u];
    MEGASIM_ASSERT(unit.stage >= 0 && static_cast<std::size_t>(unit.stage) < workload.stages.size() &&
                       unit.records.size() == workload.stages[static_cast<std::size_t>(unit.stage)].tasks.size(),
                   "trace unit does not match the workload");
    if (u != cached_unit) {
      events = unit_events(workload, unit);
      cached_unit = u;
    }
    emit({}, metadata(rank, 0, "process_name",
                      fmt::format("rank {} (stage {}, replica {}, tp {})", rank, unit.stage, unit.replica,
                                  layout.tp_rank(rank))));
    for (const models::StreamKind stream : kStreams) {
      emit({}, metadata(rank, static_cast<int>(stream), "thread_name", models::to_string(stream)));
    }
    const std::string prefix = fmt::format("{{\"pid\":{},", rank);
    for (const std::string& body : events) emit(prefix, body);
  }
  out << "\n],\"displayTimeUnit\":\"ns\",\n\"megasim\":" << megasim_object(trace, ranks, scenario) << "}\n";
}

std::string perfetto_trace_json(const models::Workload& workload, const backend::Trace& trace,
                                const TraceFilter& filter, const Scenario* scenario) {
  std::ostringstream out;
  write_perfetto_trace(out, workload, trace, filter, scenario);
  return out.str();
}

}  // namespace megasim::scenarios
