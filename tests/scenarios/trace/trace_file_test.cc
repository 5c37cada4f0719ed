// Reading back a written Perfetto trace (trace_file.h): a simulated iteration written with its
// scenario reads back record for record, and its replay reproduces the iteration time; traces that
// cannot be analysed are errors naming the file and the problem.
#include "scenarios/trace/trace_file.h"
#include "tests/scenarios/iteration_test_util.h"

#include <gtest/gtest.h>

#include <string>

#include "scenarios/config/loader.h"
#include "scenarios/report/perfetto_trace.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/trace/trace_replay.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

Scenario tp_pp_dp() {
  return load_scenario_text(std::string(testing::kSmallGptOnOneServer) + testing::kTpPpDpWithJitter);
}

std::string error_of(const std::string& text) {
  try {
    parse_trace_file(text, "t.json");
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceFile, ASimulatedTraceReadsBackAndReplaysToItsTime) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  const std::string json = perfetto_trace_json(run.workload, run.trace, {{}, 0}, &s);
  const TraceFile f = parse_trace_file(json, "t.json");
  EXPECT_EQ(f.scenario.plan.tensor_model_parallel_size, 2);
  EXPECT_EQ(f.workload.stages.size(), 2u);
  EXPECT_EQ(f.trace.backend, "sim");
  EXPECT_EQ(f.trace.iteration_time, run.trace.iteration_time);
  ASSERT_EQ(f.trace.units.size(), run.trace.units.size());
  for (std::size_t u = 0; u < f.trace.units.size(); ++u) {
    EXPECT_EQ(f.trace.units[u].ranks, run.trace.units[u].ranks);
    EXPECT_EQ(f.trace.units[u].stage, run.trace.units[u].stage);
    EXPECT_EQ(f.trace.units[u].replica, run.trace.units[u].replica);
    ASSERT_EQ(f.trace.units[u].records.size(), run.trace.units[u].records.size());
    for (std::size_t i = 0; i < f.trace.units[u].records.size(); ++i) {
      const backend::TaskRecord& a = f.trace.units[u].records[i];
      const backend::TaskRecord& b = run.trace.units[u].records[i];
      ASSERT_EQ(a.start, b.start) << u << " " << i;
      ASSERT_EQ(a.transfer_start, b.transfer_start) << u << " " << i;
      ASSERT_EQ(a.end, b.end) << u << " " << i;
      ASSERT_EQ(a.tp_exposed, b.tp_exposed) << u << " " << i;
    }
  }
  const backend::Trace replayed = replay_trace(f.workload, f.trace, compute_durations(f.workload, f.trace));
  EXPECT_EQ(replayed.iteration_time, run.trace.iteration_time);
}

TEST(TraceFile, TracesThatCannotBeAnalysedAreErrors) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  EXPECT_NE(error_of("{\"traceEvents\":[}").find("t.json:1:17"), std::string::npos) << error_of("{\"traceEvents\":[}");
  EXPECT_NE(error_of("{\"traceEvents\":[]}").find("t.json: no \"megasim\" object"), std::string::npos);
  const std::string no_scenario = perfetto_trace_json(run.workload, run.trace, {{}, 0});
  EXPECT_NE(error_of(no_scenario).find("without its scenario"), std::string::npos);
  std::string json = perfetto_trace_json(run.workload, run.trace, {{}, 0}, &s);
  const std::size_t at = json.find("\"task\":0}");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 9, "\"task\":999}");
  EXPECT_NE(error_of(json).find("task 999"), std::string::npos) << error_of(json);
  std::string unknown = perfetto_trace_json(run.workload, run.trace, {{}, 0}, &s);
  unknown.replace(unknown.find("\"cluster.gpus\""), 14, "\"cluster.gpux\"");
  EXPECT_NE(error_of(unknown).find("gpux"), std::string::npos) << error_of(unknown);
}

// Numbers a double holds but an integer does not (found by the trace fuzzer: 1e27 GPUs was
// converted to an int64, undefined behaviour) are refused by name, as are indices out of range.
TEST(TraceFile, NumbersOutOfRangeAreErrorsNotConversions) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  const std::string json = perfetto_trace_json(run.workload, run.trace, {{}, 0}, &s);
  const auto with = [&json](const std::string& from, const std::string& to) {
    std::string changed = json;
    const std::size_t at = changed.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) changed.replace(at, from.size(), to);
    return error_of(changed);
  };
  EXPECT_NE(with("\"cluster.gpus\":8", "\"cluster.gpus\":1e27").find("cluster.gpus"), std::string::npos);
  EXPECT_NE(with("\"cluster.gpus\":8", "\"cluster.gpus\":8.5").find("cluster.gpus"), std::string::npos);
  const std::string unit = "{\"ranks\":[0,1],\"stage\":0,\"replica\":0}";
  EXPECT_NE(with(unit, "{\"ranks\":[1e300],\"stage\":0,\"replica\":0}").find("not ranks of the scenario's 8 GPUs"),
            std::string::npos);
  EXPECT_NE(with(unit, "{\"ranks\":[-1],\"stage\":0,\"replica\":0}").find("not ranks"), std::string::npos);
  EXPECT_NE(with(unit, "{\"ranks\":[0,1],\"stage\":4294967296,\"replica\":0}").find("stage 4294967296, not a stage"),
            std::string::npos);
  EXPECT_NE(with(unit, "{\"ranks\":[0,1],\"stage\":0,\"replica\":1e20}").find("replica is not an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace megasim::scenarios
