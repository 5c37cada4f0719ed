// The contract every fuzz target of this folder checks: megasim's readers either accept an input or
// throw sim::ConfigError (which the CLI turns into exit code 2 and a message). Any other exception,
// a crash, a sanitizer report or a hang is a bug. Each target defines run_input(); libFuzzer (the
// fuzz_* programs, Clang) or the corpus runner (regression_main.cc, any compiler) calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/error.h"

namespace megasim::fuzz {

void run_input(std::string_view input);

}  // namespace megasim::fuzz

extern "C" inline int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    megasim::fuzz::run_input(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const megasim::sim::ConfigError&) {
    // Refused with a message naming what was wrong: the expected outcome for bad input.
  }
  return 0;
}
