// Building a Scenario from TOML and from `--set section.key=value` overrides. Every error is a
// sim::ConfigError naming the key, the value and what would be valid; a malformed file names the
// file, line and column.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

// Reads a scenario file over the defaults. Unknown sections or keys and wrong types are errors. A
// relative [calibration] file is resolved against the scenario file's folder.
// Does not validate cross-key constraints: call validate() after applying overrides.
Scenario load_scenario_file(const std::string& path);
// The same from TOML text; `source` names it in error messages.
Scenario load_scenario_text(std::string_view toml_text, std::string_view source = "<string>");
// Applies TOML text on top of an existing scenario.
void apply_toml_text(Scenario& scenario, std::string_view toml_text, std::string_view source);

// Applies one "section.key=value" assignment; the value text is parsed as the key's type
// (integers, numbers, true/false, or a string with or without quotes).
void apply_override(Scenario& scenario, std::string_view assignment);
void apply_overrides(Scenario& scenario, const std::vector<std::string>& assignments);

}  // namespace megasim::scenarios
