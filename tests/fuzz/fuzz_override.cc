// Fuzz target: `--set` assignments, one per line, applied to the default scenario, then the
// scenario's checks and the plan's resolution.
#include "fuzz_target.h"
#include "scenarios/config/loader.h"
#include "scenarios/studies/plan_study.h"

namespace megasim::fuzz {

void run_input(std::string_view input) {
  scenarios::Scenario s;
  while (!input.empty()) {
    const std::size_t end = input.find('\n');
    scenarios::apply_override(s, input.substr(0, end));
    input = end == std::string_view::npos ? std::string_view{} : input.substr(end + 1);
  }
  static_cast<void>(scenarios::run_plan_study(s));
}

}  // namespace megasim::fuzz
