// The streaming trace reader (trace_events.h, behind trace_file.h): on simulated traces of several
// layouts it gives the Trace that was written, record for record, and replays to its time to the ns;
// it decodes every event as the DOM reader (json_reader.h) sees it, whatever the member order and
// whitespace; equal runs of a tensor-parallel group are stored once; and malformed text is an error
// at the same line and column as the DOM reader's.
#include "scenarios/trace/trace_events.h"
#include "tests/scenarios/iteration_test_util.h"
#include "tests/scenarios/text_position.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/config/json_reader.h"
#include "scenarios/config/json_writer.h"
#include "scenarios/config/loader.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/trace/trace_file.h"
#include "scenarios/trace/trace_replay.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

using testing::per_rank;

using Kind = JsonValue::Kind;

// A TP x PP x DP plan of 8 GPUs with jitter (so no two units are alike) and its simulated run.
struct Written {
  Scenario scenario;
  RunResult run;
};

Written simulate(int tp, int pp) {
  Written w;
  w.scenario = load_scenario_text(std::string(testing::kSmallGptOnOneServer) + R"(
[plan]
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 16
[stragglers]
jitter_cv = 0.05
)");
  w.scenario.plan.tensor_model_parallel_size = tp;
  w.scenario.plan.pipeline_model_parallel_size = pp;
  w.run = run_iteration_study(w.scenario);
  return w;
}

void expect_same_trace(const backend::Trace& read, const backend::Trace& written) {
  EXPECT_EQ(read.backend, written.backend);
  EXPECT_EQ(read.iteration_time, written.iteration_time);
  ASSERT_EQ(read.units.size(), written.units.size());
  for (std::size_t u = 0; u < read.units.size(); ++u) {
    const backend::TraceUnit& a = read.units[u];
    const backend::TraceUnit& b = written.units[u];
    EXPECT_EQ(a.ranks, b.ranks);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.replica, b.replica);
    ASSERT_EQ(a.records.size(), b.records.size());
    for (std::size_t i = 0; i < a.records.size(); ++i) {
      ASSERT_EQ(a.records[i].start, b.records[i].start) << u << " " << i;
      ASSERT_EQ(a.records[i].transfer_start, b.records[i].transfer_start) << u << " " << i;
      ASSERT_EQ(a.records[i].end, b.records[i].end) << u << " " << i;
      ASSERT_EQ(a.records[i].tp_exposed, b.records[i].tp_exposed) << u << " " << i;
    }
  }
}

TEST(TraceEvents, SimulatedTracesOfEveryLayoutReadBackAndReplayToTheirTime) {
  for (const auto& [tp, pp] : {std::pair{2, 2}, std::pair{1, 1}, std::pair{1, 4}, std::pair{4, 2}}) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " pp " + std::to_string(pp));
    const Written w = simulate(tp, pp);
    for (const backend::Trace& trace : {w.run.trace, per_rank(w.run.trace)}) {
      const std::string json = perfetto_trace_json(w.run.workload, trace, {{}, 0}, &w.scenario);
      const TraceFile f = parse_trace_file(json, "t.json");
      expect_same_trace(f.trace, trace);
      const auto replay = [](const models::Workload& workload, const backend::Trace& t) {
        return replay_trace(workload, t, compute_durations(workload, t)).iteration_time;
      };
      EXPECT_EQ(replay(f.workload, f.trace), replay(w.run.workload, trace));
      EXPECT_EQ(replay(f.workload, f.trace), trace.iteration_time);
    }
  }
}

// A trace of some ranks reads back as the units of those ranks.
TEST(TraceEvents, APartialTraceReadsBackItsRanks) {
  const Written w = simulate(2, 2);
  const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 3}, &w.scenario);
  const TraceFile f = parse_trace_file(json, "t.json");
  const std::vector<std::int64_t> ranks = selected_ranks(w.run.workload, w.run.trace, {{}, 3});
  std::vector<std::int64_t> read;
  for (const backend::TraceUnit& unit : f.trace.units) {
    read.insert(read.end(), unit.ranks.begin(), unit.ranks.end());
    for (const backend::TraceUnit& written : w.run.trace.units) {
      if (written.stage != unit.stage || written.replica != unit.replica) continue;
      ASSERT_EQ(unit.records.size(), written.records.size());
      for (std::size_t i = 0; i < unit.records.size(); ++i) EXPECT_EQ(unit.records[i].end, written.records[i].end);
    }
  }
  std::sort(read.begin(), read.end());
  EXPECT_EQ(read, ranks);
}

// The events of each pid as the DOM reader sees them: ph "X", tid other than 1, times in ns.
std::vector<TraceEvent> dom_events(const JsonValue& doc, std::int64_t pid) {
  const auto ns = [](double us) { return static_cast<sim::SimTime>(std::llround(us * 1e3)); };
  std::vector<TraceEvent> out;
  for (const JsonValue& e : doc.find("traceEvents")->items) {
    if (e.find("ph")->text != "X" || e.find("pid")->number != static_cast<double>(pid) || e.find("tid")->number == 1) {
      continue;
    }
    const JsonValue& args = *e.find("args");
    TraceEvent t;
    t.task = static_cast<std::int64_t>(args.find("task")->number);
    t.transfer_start = ns(e.find("ts")->number);
    t.end = ns(e.find("ts")->number + e.find("dur")->number);
    if (const JsonValue* x = args.find("tp_exposed_us")) {
      t.has_tp_exposed = true;
      t.tp_exposed = ns(x->number);
    }
    if (const JsonValue* x = args.find("posted_us")) {
      t.has_posted = true;
      t.posted = ns(x->number);
    }
    out.push_back(t);
  }
  return out;
}

std::vector<TraceEvent> streamed_events(const EventsByPid& events, std::int64_t pid) {
  std::vector<TraceEvent> out;
  for (const std::vector<TraceEvent>* run : events.events_of(pid)) out.insert(out.end(), run->begin(), run->end());
  return out;
}

// `v` written back with every object's members in reverse order and two-space indentation.
void write_reversed(JsonWriter& w, const JsonValue& v) {
  switch (v.kind) {
    case Kind::kNull:
      w.null();
      break;
    case Kind::kBool:
      w.value(v.boolean);
      break;
    case Kind::kNumber:
      w.value(v.number);
      break;
    case Kind::kString:
      w.value(v.text);
      break;
    case Kind::kArray:
      w.begin_array();
      for (const JsonValue& item : v.items) write_reversed(w, item);
      w.end_array();
      break;
    case Kind::kObject:
      w.begin_object();
      for (auto it = v.members.rbegin(); it != v.members.rend(); ++it) {
        w.key(it->first);
        write_reversed(w, it->second);
      }
      w.end_object();
      break;
  }
}

TEST(TraceEvents, EveryEventDecodesAsTheDomReaderSeesIt) {
  const Written w = simulate(2, 2);
  const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 0}, &w.scenario);
  const JsonValue doc = parse_json(json);
  JsonWriter reversed(2);
  write_reversed(reversed, doc);  // "megasim" first, every event's args before its pid
  for (const std::string& text : {json, reversed.str()}) {
    const TraceEvents read = read_trace_events(text, "t.json");
    ASSERT_EQ(read.megasim.kind, Kind::kObject);
    EXPECT_TRUE(read.has_event_array);
    for (std::int64_t pid = 0; pid < w.run.workload.plan.world_size; ++pid) {
      const std::vector<TraceEvent> expected = dom_events(doc, pid);
      ASSERT_FALSE(expected.empty());
      EXPECT_EQ(streamed_events(read.events, pid), expected) << pid;
    }
    EXPECT_TRUE(read.events.events_of(w.run.workload.plan.world_size).empty());
    expect_same_trace(parse_trace_file(text, "t.json").trace, w.run.trace);
  }
}

// The ranks of a TP group have the same events, one rank after another: stored once. Jitter makes
// the units differ, so nothing else is shared.
TEST(TraceEvents, TheRanksOfATensorParallelGroupShareTheirEvents) {
  for (const int tp : {1, 2, 4}) {
    const Written w = simulate(tp, 2);
    const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 0}, &w.scenario);
    const TraceEvents read = read_trace_events(json, "t.json");
    EXPECT_EQ(read.events.stored() * static_cast<std::size_t>(tp), read.events.added()) << tp;
  }
}

std::string dom_error(const std::string& text) {
  try {
    parse_json(text, "t.json");
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string stream_error(const std::string& text) {
  try {
    parse_trace_file(text, "t.json");
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// "t.json:LINE:COLUMN" of a byte offset, counted as the readers count.
std::string position(const std::string& text, std::size_t offset) {
  return testing::text_position("t.json", text, offset);
}

// A control byte anywhere, or the text cut short anywhere, is a syntax error where it happens: the
// streaming reader reports it in the DOM reader's words, at the DOM reader's line and column.
TEST(TraceEvents, MalformedTextIsAnErrorAtItsLineAndColumn) {
  const Written w = simulate(2, 2);
  const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 0}, &w.scenario);
  const std::size_t step = json.size() / 97;
  for (std::size_t at = 0; at < json.size(); at += step) {
    std::string bad = json;
    bad[at] = '\x01';
    const std::string expected = dom_error(bad);
    ASSERT_EQ(expected.rfind("t.json:", 0), 0u) << expected;
    EXPECT_EQ(stream_error(bad), expected) << at;
    const std::string cut = json.substr(0, at);
    EXPECT_EQ(stream_error(cut), dom_error(cut)) << at;
  }
  // In the middle of an event's number: the error is at the byte.
  std::string corrupt = json;
  const std::size_t digit = json.find("\"ts\":", json.find("\"ph\":\"X\"")) + 5;
  corrupt[digit] = '\x01';
  EXPECT_EQ(stream_error(corrupt), position(corrupt, digit) + ": expected a JSON value, found '\x01'");
  for (const char* bad : {"", "{\"traceEvents\":[}", "{\"traceEvents\":[1,]}", "{\"traceEvents\":[{\"a\":1,\"a\":2}]}",
                          "{\"megasim\":{},\"megasim\":{}}", "{\"traceEvents\":[{\"args\":{\"x\":1,\"x\":1}}]}",
                          "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1e999}]}", "{\"traceEvents\":[]} x",
                          "{\"traceEvents\":[{\"ts\":01}]}"}) {
    EXPECT_EQ(stream_error(bad), dom_error(bad)) << bad;
    EXPECT_EQ(stream_error(bad).rfind("t.json:", 0), 0u) << stream_error(bad);
  }
  // Each kind of error, wherever the streaming reader is (an event, its args, a member it skips,
  // the "megasim" DOM): in the DOM reader's words at its line and column.
  // The document and "traceEvents" and arrays in it: 256 arrays and objects nested, then 257.
  const auto nested = [](std::size_t arrays) {
    return "{\"traceEvents\":[" + std::string(arrays, '[') + std::string(arrays, ']') + "]}";
  };
  for (const std::string& bad :
       {std::string("{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"k\":{\"a\":1,\"a\":2}}}]}"),
        std::string("{\"traceEvents\":[{\"cat\":[{\"a\":1,\n\"a\":2}]}]}"),
        std::string("{\"megasim\":{\"x\":[{\"a\":1,\"a\":2}]}}"), std::string("{\"other\":{\"a\":1,\"a\":2}}"),
        std::string("{\"traceEvents\":[{\"ts\":1e-400}]}"), std::string("{\"megasim\":-1e400}"),
        std::string("{\"traceEvents\":[{\"args\":{\"task\":1.}}]}"), std::string("{\"traceEvents\":[\"\\ud800\"]}"),
        std::string("{\"traceEvents\":[{\"name\":\"a\tb\"}]}"), std::string("{\"megasim\":{\"\\x\":1}}"),
        std::string("{\"traceEvents\":[{\"ph\":\"X\",\"name\":tru}]}"), std::string("{\"traceEvents\":[]}\0", 19),
        std::string("{\"traceEvents\":[{\"ph\":\"M\"},]}"), nested(kMaxJsonDepth - 1)}) {
    EXPECT_EQ(stream_error(bad), dom_error(bad)) << bad.substr(0, 80);
    EXPECT_EQ(stream_error(bad).rfind("t.json:", 0), 0u) << stream_error(bad);
  }
  const std::string too_deep = nested(kMaxJsonDepth - 1);  // the error at the 257th: 255 after traceEvents' '['
  EXPECT_EQ(stream_error(too_deep), position(too_deep, too_deep.find('[') + kMaxJsonDepth - 1) +
                                        ": expected at most 256 nested arrays and objects, found '['");
  EXPECT_NO_THROW(read_trace_events(nested(kMaxJsonDepth - 2), "t.json"));
}

// `consumed` hears, every 16,384 elements of "traceEvents", an offset within the element just read.
TEST(TraceEvents, ReportsItsProgressAsItReads) {
  const std::string element = "{\"ph\":\"M\"}";
  std::string text = "{\"traceEvents\":[";
  const std::size_t first = text.size();
  for (int i = 0; i < 40000; ++i) text += (i == 0 ? "" : ",") + element;
  text += "]}";
  std::vector<std::size_t> offsets;
  read_trace_events(text, "t.json", [&](std::size_t offset) { offsets.push_back(offset); });
  ASSERT_EQ(offsets.size(), 2u);
  for (std::size_t k = 0; k < offsets.size(); ++k) {
    const std::size_t start = first + ((k + 1) * 16384 - 1) * (element.size() + 1);  // of the 16,384th
    EXPECT_GT(offsets[k], start) << k;
    EXPECT_LE(offsets[k], start + element.size()) << k;
  }
}

// A well-formed event without what the replay needs is an error at the event's line and column;
// events that do not count (metadata, the tp stream) need nothing.
TEST(TraceEvents, AnEventWithoutWhatTheReplayNeedsIsAnErrorAtTheEvent) {
  const Written w = simulate(2, 2);
  const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 0}, &w.scenario);
  const std::size_t event = json.find("{\"pid\":0,\"tid\":0,\"ph\":\"X\"");
  ASSERT_NE(event, std::string::npos);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string bad = json;
    bad.replace(bad.find(from, event), from.size(), to);
    return stream_error(bad);
  };
  const std::string at = position(json, event) + ": ";
  EXPECT_EQ(with("\"ts\":", "\"tz\":"), at + "an event has no valid \"ts\"");
  EXPECT_EQ(with("\"dur\":", "\"dur\":\"1\",\"x\":"), at + "an event has no valid \"dur\"");
  EXPECT_EQ(with("\"pid\":0", "\"pid\":0.5"), at + "an event.pid is not an integer");
  EXPECT_EQ(with("\"tid\":0", "\"tid\":[0]"), at + "an event has no valid \"tid\"");
  EXPECT_EQ(with("\"args\":{", "\"args\":[],\"x\":{"), at + "an event has no valid \"args\"");
  EXPECT_EQ(with("\"task\":", "\"tusk\":"), at + "an event's args has no valid \"task\"");
  EXPECT_EQ(with("\"tp_exposed_us\":", "\"tp_hidden_us\":"),
            "t.json: a compute event's args has no valid \"tp_exposed_us\"");
  // A metadata event and a tp-stream event without ts, dur or args are no error.
  const std::size_t tp_event = json.find("\"tid\":1,\"ph\":\"X\"");
  ASSERT_NE(tp_event, std::string::npos);
  std::string fine = json;
  const std::size_t args = fine.find(",\"ts\":", tp_event);
  fine.erase(args, fine.find('}', fine.find("\"args\":", args)) + 1 - args);
  expect_same_trace(parse_trace_file(fine, "t.json").trace, w.run.trace);
}

// read_trace_file maps the file: the same TraceFile as from the text; a missing file or an empty
// one are errors.
TEST(TraceEvents, AFileReadsAsItsText) {
  const Written w = simulate(2, 2);
  const std::string json = perfetto_trace_json(w.run.workload, w.run.trace, {{}, 0}, &w.scenario);
  const auto path = std::filesystem::temp_directory_path() / "megasim_trace_events_test.json";
  std::ofstream(path, std::ios::binary) << json;
  expect_same_trace(read_trace_file(path.string()).trace, w.run.trace);
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  try {
    read_trace_file(path.string());
    ADD_FAILURE() << "an empty file read";
  } catch (const sim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":1:1: expected a JSON value"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_trace_file(path.string()), sim::ConfigError);
  EXPECT_THROW(read_trace_file(std::filesystem::temp_directory_path().string()), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::scenarios
