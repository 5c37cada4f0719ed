// Where a report came from, enough to rerun it: report.json's "provenance" object. Everything in it
// is an input or a property of the binary, so the same binary, seed and inputs still give
// bit-identical reports (golden tests mask the commit: tests/golden/run_golden.sh).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

struct Provenance {
  std::string scenario_file;     // as given to the loader; "" when not read from a file (defaults, Python)
  std::string scenario_name;     // simulation.name
  std::uint64_t seed = 0;        // simulation.seed
  std::string backend;           // sim, cpu or cuda
  std::string calibration_file;  // calibration.file as resolved; "" for the public defaults
  std::string megasim_version;
  std::string megasim_commit;  // build_info.h: "unknown" outside a git checkout
};

Provenance provenance_of(const Scenario& scenario, std::string_view backend);

// {"scenario_file", "scenario_name", "seed", "backend", "calibration_file", "megasim_version",
//  "megasim_commit"}; an empty file is written as null.
void write_provenance_json(JsonWriter& w, const Provenance& p);

}  // namespace megasim::scenarios
