// Measured runs for `megasim calibrate --measured FILE.csv` (docs/calibration.md): one row per run,
// each the scenario with its own overrides and what was measured.
//
//   # comment lines (first character '#') and blank lines are skipped
//   name,scenario,cluster.gpus,plan.global_batch_size,iteration_time_s
//   small,narayanan_1p7b.toml,32,512,2.31
//
// - a header row, then one row per run with as many fields as the header; RFC 4180 quoting ("a,b",
//   "" inside quotes) and CRLF line ends are accepted;
// - `name` (optional): the row's name in reports (default "row N", N counting data rows from 1);
// - `scenario` (optional): the row's scenario file, relative to the CSV's folder; without it (or
//   with the cell empty) the SCENARIO of the command line;
// - every other column but the target is a scenario key, as `--set` takes it (`cluster.gpus`); an
//   empty cell leaves the key as the scenario has it;
// - exactly one target column: `iteration_time_s` (seconds, > 0) or `mfu` (model-FLOP utilisation
//   under the report's convention, a fraction in (0, 1]).
// Every error is a sim::ConfigError naming the file, the line and the column, and what is valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

enum class MeasuredTarget : std::uint8_t { kIterationTime, kMfu };
std::string_view to_string(MeasuredTarget target);  // the column's name

// A generated table of measurements is kilobytes; 16 MiB bounds a runaway file.
inline constexpr std::uint64_t kMaxMeasuredCsvBytes = std::uint64_t{16} << 20;
// Each row is simulated many times by a fit; more rows than this is a mistake, not a calibration.
inline constexpr std::size_t kMaxMeasuredRows = 10'000;

struct MeasuredRow {
  std::string name;
  std::size_t line = 0;                // 1-based line of the CSV, for messages
  std::string scenario_file;           // resolved against the CSV's folder; "" for the base scenario
  std::vector<std::string> overrides;  // "section.key=value", the non-empty cells in column order
  double measured = 0;                 // the target's value
};

struct MeasuredTable {
  std::string source;  // the file, as named
  MeasuredTarget target = MeasuredTarget::kIterationTime;
  std::vector<std::string> keys;  // the override columns, in order
  std::vector<MeasuredRow> rows;
};

// Parses CSV text; scenario cells are resolved against `folder` ("" leaves them as written).
MeasuredTable parse_measured_csv(std::string_view text, const std::string& source, const std::string& folder);
// Reads and parses a file (scenarios/config/input_file.h checks; `option` names it in errors).
MeasuredTable read_measured_csv(const std::string& path, const std::string& option);

// The row's scenario: its scenario file (or `base`), then its overrides; validated. Throws
// sim::ConfigError prefixed with the row's file and line.
Scenario row_scenario(const MeasuredTable& table, const MeasuredRow& row, const Scenario& base);

}  // namespace megasim::scenarios
