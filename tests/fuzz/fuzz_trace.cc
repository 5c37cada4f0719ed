// Fuzz target: a Perfetto trace with its "megasim" object (`megasim whatif TRACE.json`): the JSON
// reader, the embedded scenario, and the task records rebuilt from the events.
#include "fuzz_target.h"
#include "scenarios/trace/trace_file.h"

namespace megasim::fuzz {

void run_input(std::string_view input) {
  static_cast<void>(scenarios::parse_trace_file(input, "fuzz.json"));
}

}  // namespace megasim::fuzz
