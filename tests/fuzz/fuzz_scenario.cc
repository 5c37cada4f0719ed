// Fuzz target: a scenario file's text through the loader (TOML++ and the key table), the checks of
// every section, and the plan's resolution and memory estimate (`megasim plan`).
#include "fuzz_target.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"

namespace megasim::fuzz {

void run_input(std::string_view input) {
  const scenarios::Scenario s = scenarios::load_scenario_text(input, "fuzz.toml");
  static_cast<void>(scenarios::run_plan_study(s));
}

}  // namespace megasim::fuzz
