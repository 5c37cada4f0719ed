#include "cli/scenario_options.h"

#include "cli/numeric_options.h"
#include "scenarios/config/loader.h"
#include "sim/error.h"

namespace megasim::cli {

void add_scenario_options(CLI::App& command, ScenarioOptions& options) {
  command.add_option("scenario", options.file, "scenario TOML file (default: the built-in MegaScale defaults)");
  command.add_option("--set", options.overrides, "override a key: section.key=value (repeatable)")
      ->type_name("KEY=VALUE");
  command.add_option("--seed", options.seed, "master random seed (same as --set simulation.seed=N)")
      ->check(integer_in(0, INT64_MAX));
}

void add_gpus_option(CLI::App& command, ScenarioOptions& options) {
  command.add_option("--gpus", options.gpus, "cluster size in GPUs (same as --set cluster.gpus=N)")
      ->check(integer_in(1, kMaxGpusOption));
}

namespace {

// Applies `--option value` as `--set key=value`; refuses it next to a --set of the same key, which
// one of the two would silently override.
void apply_shorthand(scenarios::Scenario& scenario, const ScenarioOptions& options, const std::string& option,
                     const std::string& key, std::int64_t value) {
  for (const std::string& assignment : options.overrides) {
    if (assignment.starts_with(key + "=")) {
      throw sim::ConfigError(option, std::to_string(value),
                             "no " + option + " with --set " + assignment + " (both set " + key + ": give one)");
    }
  }
  scenarios::apply_override(scenario, key + "=" + std::to_string(value));
}

}  // namespace

scenarios::Scenario resolve_scenario(const ScenarioOptions& options) {
  scenarios::Scenario scenario;
  if (!options.file.empty()) scenario = scenarios::load_scenario_file(options.file);
  scenarios::apply_overrides(scenario, options.overrides);
  if (options.gpus) apply_shorthand(scenario, options, "--gpus", "cluster.gpus", *options.gpus);
  if (options.seed) apply_shorthand(scenario, options, "--seed", "simulation.seed", *options.seed);
  return scenario;
}

void apply_option(scenarios::Scenario& scenario, const std::string& option, const std::string& key,
                  const std::string& value) {
  try {
    scenarios::apply_override(scenario, key + "=" + value);
  } catch (const sim::ConfigError& e) {
    if (e.key() != key) throw;
    throw sim::ConfigError(option, e.value(), e.valid());
  }
}

void add_timeout_option(CLI::App& command, double& seconds) {
  command
      .add_option("--timeout", seconds,
                  "--backend cpu|cuda: seconds a rank may wait without progress (cuda: an iteration may take) "
                  "before the run is aborted")
      ->capture_default_str()
      ->check(number_in(1e-3, kMaxTimeoutS));
}

std::chrono::milliseconds checked_timeout(double seconds) {
  if (!(seconds > 0)) throw sim::ConfigError("--timeout", std::to_string(seconds), "seconds > 0");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

}  // namespace megasim::cli
