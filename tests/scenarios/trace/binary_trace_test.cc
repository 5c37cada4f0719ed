// trace.bin (binary_trace.h): a simulated iteration written both ways reads back to the same
// TraceFile, field by field, and the same what-if analysis; a damaged or hostile file (truncated at
// any byte, a count of 2^62, a wrong magic or version, a checksum mismatch, indices outside the
// plan) is an error naming the file and the byte, never a large allocation or a crash.
#include "scenarios/trace/binary_trace.h"
#include "tests/scenarios/iteration_test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scenarios/config/embedded_scenario.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/run_study.h"
#include "scenarios/studies/whatif_study.h"
#include "scenarios/trace/run_outputs.h"
#include "scenarios/trace/trace_whatif.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

Scenario tp_pp_dp() {
  return load_scenario_text(std::string(testing::kSmallGptOnOneServer) + testing::kTpPpDpWithJitter);
}

std::string binary_of(const RunResult& run, const Scenario& s, const TraceFilter& filter = {{}, 0}) {
  std::ostringstream out;
  write_binary_trace(out, run.workload, run.trace, filter, s);
  return out.str();
}

std::string error_of(const std::string& bytes) {
  try {
    parse_binary_trace(bytes, "t.bin");
  } catch (const sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

void expect_same(const TraceFile& a, const TraceFile& b) {
  EXPECT_EQ(scenario_keys_json(a.scenario), scenario_keys_json(b.scenario));
  EXPECT_EQ(a.workload.stages.size(), b.workload.stages.size());
  EXPECT_EQ(a.trace.backend, b.trace.backend);
  EXPECT_EQ(a.trace.iteration_time, b.trace.iteration_time);
  EXPECT_TRUE(b.trace.flows.empty());
  ASSERT_EQ(a.trace.units.size(), b.trace.units.size());
  for (std::size_t u = 0; u < a.trace.units.size(); ++u) {
    const backend::TraceUnit& x = a.trace.units[u];
    const backend::TraceUnit& y = b.trace.units[u];
    EXPECT_EQ(x.ranks, y.ranks) << u;
    EXPECT_EQ(x.stage, y.stage) << u;
    EXPECT_EQ(x.replica, y.replica) << u;
    ASSERT_EQ(x.records.size(), y.records.size()) << u;
    for (std::size_t i = 0; i < x.records.size(); ++i) {
      ASSERT_EQ(x.records[i].start, y.records[i].start) << u << " " << i;
      ASSERT_EQ(x.records[i].transfer_start, y.records[i].transfer_start) << u << " " << i;
      ASSERT_EQ(x.records[i].end, y.records[i].end) << u << " " << i;
      ASSERT_EQ(x.records[i].tp_exposed, y.records[i].tp_exposed) << u << " " << i;
    }
  }
}

// The start of an error at byte `at` of t.bin.
std::string at_byte(std::size_t at) {
  return "t.bin: byte " + std::to_string(at) + ": ";
}

void put_le(std::string& bytes, std::size_t at, std::uint64_t x, int width) {
  for (int i = 0; i < width; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((x >> (8 * i)) & 0xFFU);
}

// Offsets in the layout of binary_trace.h for a trace of the "sim" backend.
constexpr std::size_t kVersionAt = 8;
constexpr std::size_t kBackendAt = 24;
constexpr std::size_t kScenarioLengthAt = kBackendAt + 8 + 3;  // "sim"
std::size_t units_at(const std::string& bytes) {
  std::uint64_t length = 0;
  for (std::size_t i = 8; i-- > 0;) length = (length << 8U) | static_cast<std::uint8_t>(bytes[kScenarioLengthAt + i]);
  return kScenarioLengthAt + 8 + length;
}

TEST(BinaryTrace, ReadsBackTheTraceFileOfTheJsonFieldByField) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  // Every rank, a partial selection, and one unit per rank as a real backend writes them.
  const backend::Trace per_rank = testing::per_rank(run.trace);
  for (const auto& [trace, filter] :
       {std::pair{&run.trace, TraceFilter{{}, 0}}, std::pair{&run.trace, TraceFilter{{}, 3}},
        std::pair{&run.trace, TraceFilter{{5, 2}, 0}}, std::pair{&per_rank, TraceFilter{{}, 0}}}) {
    const std::string json = perfetto_trace_json(run.workload, *trace, filter, &s);
    std::ostringstream out;
    write_binary_trace(out, run.workload, *trace, filter, s);
    const std::string binary = out.str();
    ASSERT_TRUE(is_binary_trace(binary));
    EXPECT_LT(binary.size() * 3, json.size());
    const TraceFile from_json = parse_trace_file(json, "t.json");
    const TraceFile from_binary = parse_binary_trace(binary, "t.bin");
    expect_same(from_json, from_binary);
    if (filter.max_ranks == 0 && filter.ranks.empty()) {
      EXPECT_EQ(to_json(analyse_trace(from_binary.workload, from_binary.trace, 1)),
                to_json(analyse_trace(from_json.workload, from_json.trace, 1)));
    }
  }
  // The records are the run's own.
  const TraceFile f = parse_binary_trace(binary_of(run, s), "t.bin");
  ASSERT_EQ(f.trace.units.size(), run.trace.units.size());
  for (std::size_t u = 0; u < f.trace.units.size(); ++u) {
    EXPECT_EQ(f.trace.units[u].ranks, run.trace.units[u].ranks);
    ASSERT_EQ(f.trace.units[u].records.size(), run.trace.units[u].records.size());
    for (std::size_t i = 0; i < f.trace.units[u].records.size(); ++i) {
      EXPECT_EQ(f.trace.units[u].records[i].end, run.trace.units[u].records[i].end);
    }
  }
}

// run --out writes trace.bin next to trace.json; the what-if study reads either, a renamed
// trace.bin (by its magic bytes) and the folder, to the same report.
TEST(BinaryTrace, WhatIfReadsEitherFileOfRunOut) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  const auto dir = std::filesystem::temp_directory_path() / "megasim_binary_trace_test";
  std::filesystem::remove_all(dir);
  const std::vector<std::string> paths =
      write_run_outputs(dir.string(), "--out", "{}", run.workload, run.trace, {{}, 0}, s);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[1], (dir / "trace.bin").string());
  std::filesystem::copy_file(dir / "trace.bin", dir / "renamed.json");
  const std::string expected = to_json(run_whatif_study((dir / "trace.json").string(), 1));
  for (const auto& path : {dir / "trace.bin", dir, dir / "renamed.json"}) {
    EXPECT_EQ(to_json(run_whatif_study(path.string(), 1)), expected) << path;
  }
  EXPECT_EQ(recorded_trace_path(dir.string()), (dir / "trace.bin").string());
  std::filesystem::remove(dir / "trace.bin");
  EXPECT_EQ(recorded_trace_path(dir.string()), (dir / "trace.json").string());
  std::filesystem::remove_all(dir);
}

// A file cut short anywhere is refused, naming the file and a byte offset.
TEST(BinaryTrace, TruncatedAtAnyByteIsAnError) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  const std::string bytes = binary_of(run, s, {{}, 2});
  ASSERT_EQ(error_of(bytes), "no error");
  // Every byte of the header, the scenario's edges and the last records; every 13th in between.
  for (std::size_t n = 0; n < bytes.size(); n += (n < 96 || n + 400 > bytes.size()) ? 1U : 13U) {
    const std::string e = error_of(bytes.substr(0, n));
    ASSERT_EQ(e.rfind("t.bin: byte ", 0), 0u) << n << ": " << e;
  }
  const std::string last = error_of(bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(last.find("the checksum (8 bytes), found the end of the file after 7: the file is truncated"),
            std::string::npos)
      << last;
}

TEST(BinaryTrace, HostileHeadersAndCountsAreErrorsBeforeAnyAllocation) {
  const Scenario s = tp_pp_dp();
  const RunResult run = run_iteration_study(s);
  const std::string good = binary_of(run, s);
  const std::size_t units = units_at(good);
  const auto with = [&good](std::size_t at, std::uint64_t x, int width) {
    std::string bad = good;
    put_le(bad, at, x, width);
    return error_of(bad);
  };
  constexpr std::uint64_t k2to62 = std::uint64_t{1} << 62;
  std::string wrong_magic = good;
  wrong_magic[1] = 'X';
  EXPECT_NE(error_of(wrong_magic).find("t.bin: byte 0: expected the magic bytes"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\":[]}").find("byte 0: expected the magic bytes"), std::string::npos);
  EXPECT_NE(with(kVersionAt, 2, 4).find("byte 8: expected format version 1, found 2"), std::string::npos);
  EXPECT_NE(with(kVersionAt + 4, 1, 4).find("byte 12: expected flags 0"), std::string::npos);
  EXPECT_NE(with(16, std::uint64_t(-5), 8).find("byte 16: expected an iteration time"), std::string::npos);
  EXPECT_NE(with(kBackendAt, k2to62, 8).find("byte 24: expected 1 to 256 backend name bytes"), std::string::npos);
  EXPECT_NE(with(kScenarioLengthAt, k2to62, 8).find("found 4611686018427387904"), std::string::npos);
  EXPECT_NE(with(kScenarioLengthAt, 0, 8).find("written with its scenario"), std::string::npos);
  EXPECT_NE(with(kScenarioLengthAt, 1000000, 8).find("that fits the"), std::string::npos);
  EXPECT_NE(with(units, k2to62, 8).find(at_byte(units) + "expected 0 to 8 units"), std::string::npos);
  // The first unit: stage, replica, rank count, its first rank, its record count.
  EXPECT_NE(with(units + 8, 2, 4).find("a stage of the plan (0 to 1), found 2"), std::string::npos);
  EXPECT_NE(with(units + 12, std::uint64_t(-1), 4).find("a data-parallel replica"), std::string::npos);
  EXPECT_NE(with(units + 16, k2to62, 8).find(at_byte(units + 16) + "expected 1 to 8 ranks in a unit"),
            std::string::npos);
  EXPECT_NE(with(units + 24, 8, 8).find("a rank of the scenario's GPUs (0 to 7), found 8"), std::string::npos);
  const std::size_t records = units + 24 + 8 * run.trace.units[0].ranks.size();
  EXPECT_NE(with(records, k2to62, 8).find("records of stage 0"), std::string::npos);
  EXPECT_NE(with(records + 8, std::uint64_t{1} << 60, 8).find(at_byte(records + 8) + "expected a time in ns"),
            std::string::npos);
  // A record changed within its bounds: only the checksum tells.
  std::string flipped = good;
  flipped[records + 8] = static_cast<char>(flipped[records + 8] ^ 1);
  EXPECT_NE(error_of(flipped).find(at_byte(good.size() - 8) + "expected the checksum"), std::string::npos)
      << error_of(flipped);
  EXPECT_NE(error_of(good + "x").find("after the checksum, found 1 more bytes"), std::string::npos);
  // The embedded scenario is read as trace.json's is: a key it does not know is named.
  std::string unknown = good;
  const std::size_t key = unknown.find("\"cluster.gpus\"");
  ASSERT_NE(key, std::string::npos);
  unknown.replace(key, 14, "\"cluster.gpuz\"");
  EXPECT_NE(error_of(unknown).find("gpuz"), std::string::npos) << error_of(unknown);
}

}  // namespace
}  // namespace megasim::scenarios
