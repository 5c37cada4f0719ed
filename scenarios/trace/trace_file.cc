#include "scenarios/trace/trace_file.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "scenarios/config/embedded_scenario.h"
#include "scenarios/config/json_reader.h"
#include "scenarios/config/mapped_file.h"
#include "scenarios/trace/binary_trace.h"
#include "scenarios/trace/trace_events.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using Kind = JsonValue::Kind;

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw sim::ConfigError(fmt::format("{}: {}", source_, what));
  }

  const JsonValue& member(const JsonValue& object, std::string_view key, Kind kind, std::string_view where) const {
    const JsonValue* v = object.find(key);
    if (v == nullptr || v->kind != kind) fail(fmt::format("{} has no valid \"{}\"", where, key));
    return *v;
  }

  std::int64_t integer(const JsonValue& object, std::string_view key, std::string_view where) const {
    const std::optional<std::int64_t> x = exact_integer(member(object, key, Kind::kNumber, where).number);
    if (!x) fail(fmt::format("{}.{} is not an integer", where, key));
    return *x;
  }

  // An integer member in [0, bound), for an index into something of `bound` elements.
  std::int32_t index(const JsonValue& object, std::string_view key, std::string_view where, std::int64_t bound,
                     std::string_view of_what) const {
    const std::int64_t x = integer(object, key, where);
    if (x < 0 || x >= bound) fail(fmt::format("{} of {} {}, not {} (0 to {})", where, key, x, of_what, bound - 1));
    return static_cast<std::int32_t>(x);
  }

  // Fills the unit's records from the events of its first rank (trace_events.h): compute events
  // [start, end) with tp_exposed, communication events [transfer_start, end) posted at posted_us; a
  // later event of a task replaces an earlier one.
  void fill(backend::TraceUnit& unit, const EventsByPid& events, const models::Workload& w) const {
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
    unit.records.assign(tasks.size(), {});
    std::vector<bool> seen(tasks.size(), false);
    for (const std::vector<TraceEvent>* run : events.events_of(unit.ranks.front())) {
      for (const TraceEvent& e : *run) {
        if (e.task < 0 || static_cast<std::size_t>(e.task) >= tasks.size()) {
          fail(fmt::format("rank {} has an event of task {}, not a task of stage {}", unit.ranks.front(), e.task,
                           unit.stage));
        }
        const auto task = static_cast<std::size_t>(e.task);
        backend::TaskRecord& r = unit.records[task];
        r.transfer_start = e.transfer_start;
        r.end = e.end;
        if (tasks[task].kind == models::TaskKind::kCompute) {
          if (!e.has_tp_exposed) fail("a compute event's args has no valid \"tp_exposed_us\"");
          r.start = r.transfer_start;
          r.tp_exposed = e.tp_exposed;
        } else {
          if (!e.has_posted) fail("a communication event's args has no valid \"posted_us\"");
          r.start = e.posted;
        }
        seen[task] = true;
      }
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!seen[i])
        fail(fmt::format("rank {} has no event for task {} of stage {}", unit.ranks.front(), i, unit.stage));
    }
  }

 private:
  std::string_view source_;
};

// The TraceFile from a read trace: the workload rebuilt from the "megasim" object's scenario, and
// each written unit's records from its first rank's events.
TraceFile assemble(const TraceEvents& doc, std::string_view source) {
  const Reader in(source);
  const JsonValue& meta = doc.megasim;
  if (meta.kind != Kind::kObject) {
    in.fail("no \"megasim\" object: not a trace written by this megasim (megasim run --out DIR writes one)");
  }
  if (in.integer(meta, "version", "megasim") != 1) in.fail("megasim.version is not 1");
  const JsonValue* keys = meta.find("scenario");
  if (keys == nullptr || keys->kind != Kind::kObject) {
    in.fail("megasim has no \"scenario\": the trace was written without its scenario");
  }
  TraceFile f;
  f.scenario = scenario_from_keys(*keys, source);
  const Scenario& s = f.scenario;
  f.workload = recorded_workload(s);
  f.trace.backend = in.member(meta, "backend", Kind::kString, "megasim").text;
  f.trace.iteration_time = in.integer(meta, "iteration_time_ns", "megasim");
  if (!doc.has_event_array) in.fail("the trace has no valid \"traceEvents\"");
  for (const JsonValue& u : in.member(meta, "units", Kind::kArray, "megasim").items) {
    backend::TraceUnit unit;
    for (const JsonValue& r : in.member(u, "ranks", Kind::kArray, "a unit").items) {
      const std::optional<std::int64_t> rank = r.kind == Kind::kNumber ? exact_integer(r.number) : std::nullopt;
      if (!rank || *rank < 0 || *rank >= s.cluster.gpus) {
        in.fail(fmt::format("a unit's ranks are not ranks of the scenario's {} GPUs", s.cluster.gpus));
      }
      unit.ranks.push_back(*rank);
    }
    if (unit.ranks.empty()) in.fail("a unit has no ranks");
    unit.stage =
        in.index(u, "stage", "a unit", static_cast<std::int64_t>(f.workload.stages.size()), "a stage of the plan");
    unit.replica = in.index(u, "replica", "a unit", f.workload.plan.replicas(), "a data-parallel replica of the plan");
    in.fill(unit, doc.events, f.workload);
    f.trace.units.push_back(std::move(unit));
  }
  return f;
}

}  // namespace

TraceFile parse_trace_file(std::string_view text, std::string_view source) {
  return assemble(read_trace_events(text, source), source);
}

TraceFile read_trace_file(const std::string& path) {
  MappedFile file(path, "trace file", "a readable trace written by megasim (trace.bin or trace.json)");
  const auto release = [&file](std::size_t offset) { file.release_before(offset); };
  if (is_binary_trace(file.text())) return parse_binary_trace(file.text(), path, release);
  return assemble(read_trace_events(file.text(), path, release), path);
}

}  // namespace megasim::scenarios
