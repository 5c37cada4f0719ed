#include "scenarios/report/perfetto_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "sim/error.h"
#include "tests/scenarios/iteration_test_util.h"

namespace megasim::scenarios {
namespace {

using models::CollectiveOp;
using models::TaskCategory;
using models::TaskKind;
using testing::compute;
using testing::dp_call;
using testing::p2p;

// tp = 2, pp = 2, dp = 1: stage 0 is ranks {0, 1}, stage 1 ranks {2, 3} (Megatron order tp-dp-pp).
// Each forward runs a kernel list with 2 TP all-reduces 3 times (6 calls).
struct Fixture {
  models::Workload workload;
  backend::Trace trace;
};

Fixture two_stages() {
  models::Task f0 = compute(TaskCategory::kForward, 0);
  f0.runs = {{0, 3}};
  models::Task f1 = compute(TaskCategory::kForward, 0, {0});
  f1.runs = {{0, 3}};
  models::StageProgram s0{{f0, p2p(TaskKind::kPpSend, TaskCategory::kPipelineForward, 0, +1, 0, {0}),
                           dp_call(CollectiveOp::kReduceScatter, {0}), compute(TaskCategory::kOptimizer, -1, {2})}};
  models::StageProgram s1{{p2p(TaskKind::kPpRecv, TaskCategory::kPipelineForward, 0, -1, 0), f1,
                           dp_call(CollectiveOp::kReduceScatter, {1}), compute(TaskCategory::kOptimizer, -1, {2})}};
  models::Workload w = testing::workload(2, 2, 1, 1, {s0, s1});
  w.kernels.push_back({"chunk forward", {}, {{CollectiveOp::kAllReduce, 1e6, 2, false}}});
  auto t = testing::trace({testing::unit(0, 0, {0, 1}, {{0, 1.5, -1, 0.25}, {1.5, 2}, {1.5, 3, 2}, {3, 3.5}}),
                           testing::unit(1, 0, {2, 3}, {{0, 2, 1.5}, {2, 3.5}, {3.5, 4.5}, {4.5, 5}})},
                          5);
  return {w, t};
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The complete events of one process, without the pid.
std::vector<std::string> events_of(const std::string& json, std::int64_t pid) {
  const std::string prefix = "{\"pid\":" + std::to_string(pid) + ",";
  std::vector<std::string> out;
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0 && line.find("\"ph\":\"X\"") != std::string::npos) {
      if (line.back() == ',') line.pop_back();  // the separator, absent after the last event
      out.push_back(line.substr(prefix.size()));
    }
  }
  return out;
}

TEST(PerfettoTrace, DocumentShapeAndEventCounts) {
  const Fixture f = two_stages();
  const std::string json = perfetto_trace_json(f.workload, f.trace);
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_NE(json.find("],\"displayTimeUnit\":\"ns\","), std::string::npos);
  EXPECT_TRUE(testing::balanced_json(json));
  // Per rank: 4 tasks + 1 TP event for the forward; 1 process name + 4 thread names. 4 ranks.
  EXPECT_EQ(count(json, "\"ph\":\"X\""), 4u * 5);
  EXPECT_EQ(count(json, "\"ph\":\"M\""), 4u * 5);
  EXPECT_EQ(count(json, "\"name\":\"process_name\""), 4u);
  EXPECT_EQ(count(json, "\"name\":\"thread_name\""), 4u * 4);
}

TEST(PerfettoTrace, PidIsRankTidIsStreamTimesInMicroseconds) {
  const Fixture f = two_stages();
  const std::string json = perfetto_trace_json(f.workload, f.trace);
  EXPECT_NE(json.find("\"pid\":2,\"tid\":0,\"ph\":\"M\",\"name\":\"process_name\","
                      "\"args\":{\"name\":\"rank 2 (stage 1, replica 0, tp 0)\"}"),
            std::string::npos);
  EXPECT_NE(json.find("rank 3 (stage 1, replica 0, tp 1)"), std::string::npos);
  for (const char* thread : {"\"tid\":0,\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"compute\"}",
                             "\"tid\":1,\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"tp\"}",
                             "\"tid\":2,\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"pp\"}",
                             "\"tid\":3,\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"dp\"}"}) {
    EXPECT_EQ(count(json, thread), 4u) << thread;
  }
  // The send moves [1.5, 2) ms = ts 1500 us, dur 500 us, on the pp thread; posted at 1.5 ms.
  EXPECT_NE(json.find("{\"pid\":1,\"tid\":2,\"ph\":\"X\",\"name\":\"pp send fwd mb0 c0\",\"cat\":\"pipeline_forward\","
                      "\"ts\":1500,\"dur\":500,\"args\":{\"stage\":0,\"microbatch\":0,\"chunk\":0,\"posted_us\":1500"),
            std::string::npos);
  // Stage 1's forward [2, 3.5) ms on the compute thread; its TP calls on the tp thread.
  EXPECT_NE(json.find("{\"pid\":3,\"tid\":0,\"ph\":\"X\",\"name\":\"F mb0 c0\",\"cat\":\"forward\",\"ts\":2000,"
                      "\"dur\":1500"),
            std::string::npos);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":1,\"ph\":\"X\",\"name\":\"tp F mb0 c0\""), std::string::npos);
  EXPECT_NE(json.find("\"calls\":6,\"exposed_us\":250"), std::string::npos);  // 2 calls x 3 runs; 0.25 ms
  // The reduce-scatter issued at 1.5 ms moves [2, 3) ms on the dp thread.
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":3,\"ph\":\"X\",\"name\":\"dp reduce_scatter\",\"cat\":\"gradient_reduce\","
                      "\"ts\":2000,\"dur\":1000"),
            std::string::npos);
  // Ranks of one unit get the same events.
  EXPECT_EQ(events_of(json, 0), events_of(json, 1));
  EXPECT_EQ(events_of(json, 2), events_of(json, 3));
  EXPECT_EQ(events_of(json, 0).size(), 5u);
}

TEST(PerfettoTrace, FilterSelectsAndLimitsRanks) {
  const Fixture f = two_stages();
  EXPECT_EQ(selected_ranks(f.workload, f.trace, {}), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(selected_ranks(f.workload, f.trace, {{3, 1}, 64}), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(selected_ranks(f.workload, f.trace, {{}, 1}), (std::vector<std::int64_t>{0}));
  // The limit keeps whole pipelines: TP rank 0 of both stages (ranks 0 and 2) before TP rank 1.
  EXPECT_EQ(selected_ranks(f.workload, f.trace, {{}, 2}), (std::vector<std::int64_t>{0, 2}));
  // An explicit list is written whole: the limit is the default selection's.
  EXPECT_EQ(selected_ranks(f.workload, f.trace, {{3, 1}, 1}), (std::vector<std::int64_t>{1, 3}));
  const std::string json = perfetto_trace_json(f.workload, f.trace, {{3}, 0});
  EXPECT_EQ(count(json, "\"name\":\"process_name\""), 1u);
  EXPECT_EQ(count(json, "{\"pid\":3,"), 10u);
  EXPECT_EQ(count(json, "{\"pid\":0,"), 0u);
  EXPECT_TRUE(testing::balanced_json(json));
}

// 100 one-rank replicas: the default filter writes the first 64; max_ranks = 0 writes all.
TEST(PerfettoTrace, DefaultLimitKeepsLargeTracesSmall) {
  std::vector<backend::TraceUnit> units;
  for (std::int32_t r = 0; r < 100; ++r) units.push_back(testing::unit(0, r, {r}, {{0, 1}}));
  const auto w = testing::workload(1, 1, 100, 1, {models::StageProgram{{compute(TaskCategory::kForward, 0)}}});
  const auto t = testing::trace(units, 1);
  EXPECT_EQ(count(perfetto_trace_json(w, t), "\"name\":\"process_name\""), 64u);
  EXPECT_EQ(count(perfetto_trace_json(w, t, {{}, 0}), "\"name\":\"process_name\""), 100u);
  EXPECT_EQ(selected_ranks(w, t, {}).back(), 63);
}

TEST(PerfettoTrace, InvalidFilterNamesTheKey) {
  const Fixture f = two_stages();
  const auto key_of = [&](const TraceFilter& filter) {
    std::ostringstream out;
    try {
      write_perfetto_trace(out, f.workload, f.trace, filter);
    } catch (const sim::ConfigError& e) {
      EXPECT_TRUE(out.str().empty());  // nothing written before the error
      return e.key();
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(key_of({{}, -1}), "trace.max_ranks");
  EXPECT_EQ(key_of({{4}, 64}), "trace.ranks");  // world size 4
  EXPECT_EQ(key_of({{-1}, 64}), "trace.ranks");
  EXPECT_EQ(key_of({{2, 1, 2}, 64}), "trace.ranks");  // listed twice
  // A rank of the job the trace does not hold (a partial measured trace) is refused, not skipped.
  Fixture partial = two_stages();
  partial.trace.units[1].ranks = {2};
  std::ostringstream out;
  EXPECT_NO_THROW(write_perfetto_trace(out, partial.workload, partial.trace, {{2}, 0}));
  try {
    write_perfetto_trace(out, partial.workload, partial.trace, {{3}, 0});
    ADD_FAILURE() << "rank 3 is not in the trace";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "trace.ranks");
    EXPECT_EQ(e.value(), "3");
  }
}

// Stage 0 sends micro-batch 0 [1, 3) ms while its recv of micro-batch 1 moves [2, 4) ms: the two
// partially overlap, so the recv gets a second pp lane (tid 2 + 4 = 6, "pp 2"); the send of
// micro-batch 1 [3, 5) fits the first lane again. Each send has a flow to stage 1's recv.
TEST(PerfettoTrace, OverlappingTransfersGetLanesAndSendsFlowToTheirRecvs) {
  models::StageProgram s0{{p2p(TaskKind::kPpSend, TaskCategory::kPipelineForward, 0, +1, 0),
                           p2p(TaskKind::kPpRecv, TaskCategory::kPipelineBackward, 1, +1, 5),
                           p2p(TaskKind::kPpSend, TaskCategory::kPipelineForward, 1, +1, 1)}};
  models::StageProgram s1{{p2p(TaskKind::kPpRecv, TaskCategory::kPipelineForward, 0, -1, 0),
                           p2p(TaskKind::kPpSend, TaskCategory::kPipelineBackward, 1, -1, 5),
                           p2p(TaskKind::kPpRecv, TaskCategory::kPipelineForward, 1, -1, 1)}};
  const models::Workload w = testing::workload(1, 2, 1, 2, {s0, s1});
  const auto t = testing::trace(
      {testing::unit(0, 0, {0}, {{1, 3}, {2, 4}, {3, 5}}), testing::unit(1, 0, {1}, {{1, 3}, {2, 4}, {3, 5}})}, 5);
  const std::string json = perfetto_trace_json(w, t);
  EXPECT_TRUE(testing::balanced_json(json));
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":6,\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":\"pp 2\"}}"),
            std::string::npos);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":2,\"ph\":\"X\",\"name\":\"pp send fwd mb0 c0\""), std::string::npos);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":6,\"ph\":\"X\",\"name\":\"pp recv bwd mb1 c0\""), std::string::npos);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":2,\"ph\":\"X\",\"name\":\"pp send fwd mb1 c0\""), std::string::npos);
  // Three sends, three flows; stage 0's first send (task 0 of 3) flows to rank 1's recv, each end at
  // its slice's middle, 2 ms; stage 1's send (task 1) flows back to the recv in lane 2.
  EXPECT_EQ(count(json, "\"ph\":\"s\""), 3u);
  EXPECT_EQ(count(json, "\"ph\":\"f\",\"bp\":\"e\""), 3u);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":2,\"ph\":\"s\",\"id\":1,\"name\":\"pp send fwd mb0 c0\",\"cat\":"
                      "\"pp_flow\",\"ts\":2000}"),
            std::string::npos);
  EXPECT_NE(json.find("{\"pid\":1,\"tid\":2,\"ph\":\"f\",\"bp\":\"e\",\"id\":1,"), std::string::npos);
  EXPECT_NE(json.find("{\"pid\":0,\"tid\":6,\"ph\":\"f\",\"bp\":\"e\",\"id\":5,\"name\":\"pp send bwd mb1 c0\""),
            std::string::npos);  // rank 1 x 3 tasks + task 1 + 1
}

TEST(PerfettoTrace, DeterministicAndStreamEqualsString) {
  const Fixture f = two_stages();
  const std::string a = perfetto_trace_json(f.workload, f.trace);
  std::ostringstream out;
  write_perfetto_trace(out, f.workload, f.trace);
  EXPECT_EQ(a, out.str());
  EXPECT_EQ(a, perfetto_trace_json(two_stages().workload, two_stages().trace));
}

}  // namespace
}  // namespace megasim::scenarios
