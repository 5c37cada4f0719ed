#include "fuzz_target.h"
#include "sim/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    megasim::fuzz::run_input(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const megasim::sim::ConfigError&) {
    // Refused with a message naming what was wrong: the expected outcome for bad input.
  }
  return 0;
}
