// Fuzz target: trace.bin (`megasim whatif DIR/trace.bin`, scenarios/trace/binary_trace.h): the
// header, the counts checked against the bytes left and the embedded scenario's plan, the records
// and the checksum. Inputs that do not begin with the magic are given it, so mutations reach past
// byte 0.
#include <string>

#include "fuzz_target.h"
#include "scenarios/trace/binary_trace.h"

namespace megasim::fuzz {

void run_input(std::string_view input) {
  if (scenarios::is_binary_trace(input)) {
    static_cast<void>(scenarios::parse_binary_trace(input, "fuzz.bin"));
    return;
  }
  const std::string with_magic = std::string(scenarios::kBinaryTraceMagic) + std::string(input);
  static_cast<void>(scenarios::parse_binary_trace(with_magic, "fuzz.bin"));
}

}  // namespace megasim::fuzz
