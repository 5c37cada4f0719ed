#include "cli/scenario_options.h"

#include <cstdint>

#include <cstdio>
#include <fstream>
#include <vector>

#include "cli/numeric_options.h"
#include "scenarios/loader.h"
#include "sim/error.h"

namespace megasim::cli {

void add_scenario_options(CLI::App& command, ScenarioOptions& options) {
  command.add_option("scenario", options.file, "scenario TOML file (default: the built-in MegaScale defaults)");
  command.add_option("--set", options.overrides, "override a key: section.key=value (repeatable)")
      ->type_name("KEY=VALUE");
  command.add_option("--seed", options.seed, "master random seed (same as --set simulation.seed=N)")
      ->check(integer_in(0, INT64_MAX));
}

scenarios::Scenario resolve_scenario(const ScenarioOptions& options) {
  scenarios::Scenario scenario;
  if (!options.file.empty()) scenario = scenarios::load_scenario_file(options.file);
  scenarios::apply_overrides(scenario, options.overrides);
  if (options.seed) scenarios::apply_override(scenario, "simulation.seed=" + std::to_string(*options.seed));
  return scenario;
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

void write_file_streamed(const std::string& path, const std::function<void(std::ostream&)>& write,
                         const std::string& option) {
  const std::string temporary = path + ".partial";
  try {
    std::vector<char> buffer(std::size_t{1} << 20);
    std::ofstream out;
    out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    out.open(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw sim::ConfigError(option, path, "a writable file path");
    write(out);
    if (!out.flush()) throw sim::ConfigError(option, path, "a writable file path");
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  // Renaming makes the file appear whole or not at all.
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw sim::ConfigError(option, path, "a writable file path");
  }
}

void write_file(const std::string& path, const std::string& text, const std::string& option) {
  write_file_streamed(
      path, [&text](std::ostream& out) { out << text; }, option);
}

}  // namespace megasim::cli
