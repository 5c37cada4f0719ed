// Options every scenario-driven command shares: an optional scenario file, `--set section.key=value`
// overrides and `--seed`; and `--gpus N` of the commands that simulate one cluster size (plan, topo,
// run, campaign). Resolution order: defaults, then the file, then --set, then --gpus and --seed
// (each the same as its --set; giving both for one key is refused).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/config/scenario.h"

namespace megasim::cli {

struct ScenarioOptions {
  std::string file;
  std::vector<std::string> overrides;
  std::optional<std::int64_t> seed;
  std::optional<std::int64_t> gpus;
};

void add_scenario_options(CLI::App& command, ScenarioOptions& options);
// `--gpus N`: the cluster size, as --set cluster.gpus=N.
void add_gpus_option(CLI::App& command, ScenarioOptions& options);
// Builds the scenario; does not validate (commands may still override keys). Throws
// sim::ConfigError for --gpus or --seed given together with a --set of the same key.
scenarios::Scenario resolve_scenario(const ScenarioOptions& options);

// `--timeout S` of the commands that run on a real backend: seconds a rank may wait without progress
// (cuda: an iteration may take) before the run is aborted.
// Sets `key` to `value` as `--set key=value` does, but a value the key refuses is refused naming
// `option` (a command's own option for a scenario key, such as collective's --routing).
void apply_option(scenarios::Scenario& scenario, const std::string& option, const std::string& key,
                  const std::string& value);

void add_timeout_option(CLI::App& command, double& seconds);
// The timeout as milliseconds; throws sim::ConfigError("--timeout") unless seconds > 0.
std::chrono::milliseconds checked_timeout(double seconds);

}  // namespace megasim::cli
